#!/usr/bin/env python3
"""A FAKE Nacos naming server for Turnpike's tests and benchmarks (Nacos itself is a Java
service that is not installable here). It is not Nacos: it answers the small part of the Nacos
v1 open API that APISIX's and Turnpike's nacos discovery use, with the documented shapes:

  POST {prefix}auth/login       username, password (query or form) -> 200
                                {"accessToken","tokenTtl","globalAdmin","username"}; 403 "unknown user!"
  GET  {prefix}ns/instance/list serviceName, namespaceId ("public"), groupName ("DEFAULT_GROUP"),
                                healthyOnly, accessToken -> 200 {"name":"G@@S","groupName","clusters",
                                "cacheMillis","hosts":[...],"lastRefTime","checksum","allIPs",
                                "reachProtectionThreshold","valid"}
  POST {prefix}ns/instance      register: ip, port, serviceName, namespaceId, groupName, weight,
                                healthy, enabled, metadata (JSON text) -> "ok"
  PUT  {prefix}ns/instance      update the same fields of a registered instance -> "ok"
  DELETE {prefix}ns/instance    deregister ip:port -> "ok"

With --auth USER:PASS every {prefix}ns/ request needs a valid accessToken (else 403, as Nacos
with nacos.core.auth.enabled). healthyOnly=true lists healthy and enabled instances, false the
enabled ones (no protect threshold). An unknown service lists no instances.

Test controls (never authenticated), under /fake/:
  POST /fake/instances?serviceName=&namespaceId=&groupName=  body: JSON list of instance objects
       (ip, port, weight, healthy, enabled, metadata; weight null: no weight field; any other
       shape is stored as is): replaces the service's instances
  POST /fake/behaviour  body: JSON {"delay_ms": N, "status": CODE (answer every ns/ request with
       it), "body": TEXT (answer ns/instance/list with this 200 body), "bodies": [TEXT, ...]
       (answer with each in turn), "expire_tokens": true}
  GET  /fake/log        JSON list of the requests received: {"method","path","query"} (last 1000)
  POST /fake/log/clear

Usage: fake_nacos.py [--port N] [--prefix /nacos/v1/] [--auth USER:PASS] [--token-ttl S]
Prints "LISTENING <port>" once it accepts connections. HTTP/1.1 with keep-alive, one thread
per connection.
"""

import argparse
import json
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

DEFAULT_NAMESPACE = "public"
DEFAULT_GROUP = "DEFAULT_GROUP"


class Registry:
    """The fake's state: instances per (namespace, group, service), tokens, behaviour, log."""

    def __init__(self, auth=None, token_ttl=18000):
        self.lock = threading.Lock()
        self.services = {}  # (ns, group, name) -> list of instance dicts
        self.cache = {}  # (ns, group, name, healthy_only) -> serialized hosts array
        self.auth = auth  # (user, password) or None
        self.token_ttl = token_ttl
        self.tokens = {}  # token -> expiry (monotonic seconds)
        self.behaviour = {}
        self.served = 0  # list answers from "bodies"
        self.log = []

    @staticmethod
    def key(query):
        ns = query.get("namespaceId") or DEFAULT_NAMESPACE
        group = query.get("groupName") or DEFAULT_GROUP
        name = query.get("serviceName", "")
        if "@@" in name:  # Nacos accepts "group@@name" too
            group, name = name.split("@@", 1)
        return ns, group, name

    def set_instances(self, key, instances):
        with self.lock:
            self.services[key] = [self.normalize(key, i) for i in instances]
            self.cache.clear()

    @staticmethod
    def normalize(key, inst):
        if not isinstance(inst, dict) or "ip" not in inst or "port" not in inst:
            return inst  # odd shapes are the test's business
        ns, group, name = key
        out = {
            "instanceId": "%s#%s#DEFAULT#%s@@%s" % (inst["ip"], inst["port"], group, name),
            "ip": inst["ip"],
            "port": inst["port"],
            "weight": inst.get("weight", 1.0),
            "healthy": inst.get("healthy", True),
            "enabled": inst.get("enabled", True),
            "ephemeral": True,
            "clusterName": "DEFAULT",
            "serviceName": "%s@@%s" % (group, name),
            "metadata": inst.get("metadata", {}),
            "instanceHeartBeatInterval": 5000,
            "instanceHeartBeatTimeOut": 15000,
            "ipDeleteTimeout": 30000,
            "instanceIdGenerator": "simple",
        }
        for k, v in inst.items():
            if k not in out:
                out[k] = v
        if out["weight"] is None:  # tests: an instance without a weight
            del out["weight"]
        return out

    def hosts_json(self, key, healthy_only):
        with self.lock:
            ck = key + (healthy_only,)
            text = self.cache.get(ck)
            if text is None:
                hosts = []
                for inst in self.services.get(key, []):
                    if isinstance(inst, dict) and "ip" in inst:
                        if inst.get("enabled", True) is False:
                            continue
                        if healthy_only and inst.get("healthy", True) is False:
                            continue
                    hosts.append(inst)
                text = json.dumps(hosts, separators=(",", ":"))
                self.cache[ck] = text
            return text

    def login(self, user, password):
        if self.auth is None or (user, password) != self.auth:
            return None
        token = secrets.token_hex(16)
        with self.lock:
            self.tokens[token] = time.monotonic() + self.token_ttl
        return token

    def token_ok(self, token):
        if self.auth is None:
            return True
        with self.lock:
            expiry = self.tokens.get(token or "")
            return expiry is not None and expiry > time.monotonic()

    def record(self, method, path, query):
        with self.lock:
            self.log.append({"method": method, "path": path, "query": query})
            del self.log[:-1000]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    registry = None  # set by make_server
    prefix = "/nacos/v1/"

    def log_message(self, *args):  # quiet
        pass

    def answer(self, status, body, content_type="application/json;charset=UTF-8"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def params(self, body):
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        ctype = self.headers.get("Content-Type") or ""
        if body and ctype.startswith("application/x-www-form-urlencoded"):
            for k, v in parse_qs(body.decode(), keep_blank_values=True).items():
                q.setdefault(k, v[-1])
        return url.path, q

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def handle_any(self, method):
        body = self.read_body()
        path, q = self.params(body)
        reg = self.registry
        if path.startswith("/fake/"):
            return self.fake(method, path, q, body)
        reg.record(method, path, q)
        b = dict(reg.behaviour)
        if b.get("delay_ms"):
            time.sleep(b["delay_ms"] / 1000.0)
        if path == self.prefix + "auth/login" and method == "POST":
            token = reg.login(q.get("username"), q.get("password"))
            if token is None:
                return self.answer(403, "unknown user!", "text/plain")
            return self.answer(200, json.dumps({"accessToken": token, "tokenTtl": reg.token_ttl,
                                                "globalAdmin": True,
                                                "username": q.get("username")}))
        if not path.startswith(self.prefix + "ns/"):
            return self.answer(404, "not found", "text/plain")
        if b.get("status"):
            return self.answer(b["status"], "fake failure", "text/plain")
        if not reg.token_ok(q.get("accessToken")):
            return self.answer(403, "token invalid!", "text/plain")
        op = path[len(self.prefix):]
        key = reg.key(q)
        if op == "ns/instance/list" and method == "GET":
            if "body" in b:
                return self.answer(200, b["body"])
            if "bodies" in b:  # one after the other, round and round
                with reg.lock:
                    reg.served += 1
                    i = reg.served % len(b["bodies"])
                return self.answer(200, b["bodies"][i])
            healthy_only = q.get("healthyOnly", "false") == "true"
            hosts = reg.hosts_json(key, healthy_only)
            now = int(time.time() * 1000)
            text = ('{"name":%s,"groupName":%s,"clusters":"","cacheMillis":10000,"hosts":%s,'
                    '"lastRefTime":%d,"checksum":"","allIPs":false,'
                    '"reachProtectionThreshold":false,"valid":true}'
                    % (json.dumps(key[1] + "@@" + key[2]), json.dumps(key[1]), hosts, now))
            return self.answer(200, text)
        if op == "ns/instance" and method in ("POST", "PUT", "DELETE"):
            return self.instance(method, key, q)
        return self.answer(404, "not found", "text/plain")

    def instance(self, method, key, q):
        reg = self.registry
        if not key[2] or "ip" not in q or "port" not in q:
            return self.answer(400, "caused: Param 'serviceName', 'ip' or 'port' is missing",
                               "text/plain")
        ip, port = q["ip"], int(q["port"])
        with reg.lock:
            current = [dict(i) for i in reg.services.get(key, [])]
        rest = [i for i in current if not (i.get("ip") == ip and i.get("port") == port)]
        mine = [i for i in current if i.get("ip") == ip and i.get("port") == port]
        if method == "DELETE":
            reg.set_instances(key, rest)
            return self.answer(200, "ok", "text/plain")
        if method == "PUT" and not mine:
            return self.answer(400, "instance not exist", "text/plain")
        inst = mine[0] if mine else {"ip": ip, "port": port}
        if "weight" in q:
            inst["weight"] = float(q["weight"])
        for flag in ("healthy", "enabled"):
            if flag in q:
                inst[flag] = q[flag] == "true"
        if "metadata" in q:
            inst["metadata"] = json.loads(q["metadata"]) if q["metadata"] else {}
        reg.set_instances(key, rest + [inst])
        return self.answer(200, "ok", "text/plain")

    def fake(self, method, path, q, body):
        reg = self.registry
        if path == "/fake/instances" and method == "POST":
            reg.set_instances(reg.key(q), json.loads(body or b"[]"))
            return self.answer(200, "ok", "text/plain")
        if path == "/fake/behaviour" and method == "POST":
            b = json.loads(body or b"{}")
            if b.pop("expire_tokens", False):
                with reg.lock:
                    reg.tokens.clear()
            reg.behaviour = b
            return self.answer(200, "ok", "text/plain")
        if path == "/fake/log" and method == "GET":
            with reg.lock:
                return self.answer(200, json.dumps(reg.log))
        if path == "/fake/log/clear" and method == "POST":
            with reg.lock:
                reg.log = []
            return self.answer(200, "ok", "text/plain")
        return self.answer(404, "not found", "text/plain")


class Server(ThreadingHTTPServer):
    allow_reuse_address = True
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)  # a client gone is no error here


def make_server(port=0, prefix="/nacos/v1/", auth=None, token_ttl=18000):
    if not prefix.endswith("/"):
        prefix += "/"
    handler = type("FakeNacosHandler", (Handler,),
                   {"registry": Registry(auth, token_ttl), "prefix": prefix})
    return Server(("127.0.0.1", port), handler)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--prefix", default="/nacos/v1/")
    p.add_argument("--auth", default="", help="USER:PASS: require login")
    p.add_argument("--token-ttl", type=int, default=18000)
    a = p.parse_args()
    auth = tuple(a.auth.split(":", 1)) if a.auth else None
    server = make_server(a.port, a.prefix, auth, a.token_ttl)
    print("LISTENING %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
