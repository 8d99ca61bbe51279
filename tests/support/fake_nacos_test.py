#!/usr/bin/env python3
"""Unit tests of the FAKE Nacos server (tests/support/fake_nacos.py): the Nacos v1 shapes the
nacos provider's tests rely on (login, instance list, register / update / deregister, auth,
healthyOnly, namespaces and groups) and the /fake/ controls. Run by ctest (fake_nacos_test)."""

import json
import os
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from urllib.parse import urlencode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_nacos  # noqa: E402


class FakeNacosTest(unittest.TestCase):
    auth = None

    def setUp(self):
        self.server = fake_nacos.make_server(0, "/nacos/v1/", self.auth, 18000)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def call(self, method, path, params=None, body=None):
        url = "http://127.0.0.1:%d%s" % (self.port, path)
        if params:
            url += "?" + urlencode(params)
        data = body.encode() if isinstance(body, str) else body
        req = urllib.request.Request(url, data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def list(self, service, **extra):
        params = {"serviceName": service, "healthyOnly": "true"}
        params.update(extra)
        status, body = self.call("GET", "/nacos/v1/ns/instance/list", params)
        self.assertEqual(status, 200, body)
        return json.loads(body)


class OpenTest(FakeNacosTest):
    def test_register_list_update_deregister(self):
        reg = {"serviceName": "web", "ip": "127.0.0.1", "port": "8080", "weight": "2"}
        self.assertEqual(self.call("POST", "/nacos/v1/ns/instance", reg), (200, "ok"))
        answer = self.list("web")
        self.assertEqual(answer["name"], "DEFAULT_GROUP@@web")
        self.assertEqual(answer["groupName"], "DEFAULT_GROUP")
        self.assertIn("lastRefTime", answer)
        [host] = answer["hosts"]
        self.assertEqual((host["ip"], host["port"], host["weight"]), ("127.0.0.1", 8080, 2.0))
        self.assertTrue(host["healthy"] and host["enabled"])
        self.assertEqual(host["serviceName"], "DEFAULT_GROUP@@web")
        upd = {"serviceName": "web", "ip": "127.0.0.1", "port": "8080", "weight": "5",
               "metadata": '{"zone":"a"}'}
        self.assertEqual(self.call("PUT", "/nacos/v1/ns/instance", upd), (200, "ok"))
        [host] = self.list("web")["hosts"]
        self.assertEqual((host["weight"], host["metadata"]), (5.0, {"zone": "a"}))
        gone = {"serviceName": "web", "ip": "127.0.0.1", "port": "8080"}
        self.assertEqual(self.call("DELETE", "/nacos/v1/ns/instance", gone), (200, "ok"))
        self.assertEqual(self.list("web")["hosts"], [])

    def test_unknown_service_lists_nothing(self):
        self.assertEqual(self.list("nobody")["hosts"], [])

    def test_healthy_only_and_enabled(self):
        self.call("POST", "/fake/instances", {"serviceName": "s"}, json.dumps([
            {"ip": "10.0.0.1", "port": 1},
            {"ip": "10.0.0.2", "port": 2, "healthy": False},
            {"ip": "10.0.0.3", "port": 3, "enabled": False}]))
        self.assertEqual([h["ip"] for h in self.list("s")["hosts"]], ["10.0.0.1"])
        every = self.list("s", healthyOnly="false")["hosts"]
        self.assertEqual([h["ip"] for h in every], ["10.0.0.1", "10.0.0.2"])

    def test_namespaces_and_groups_are_separate(self):
        self.call("POST", "/fake/instances", {"serviceName": "s", "namespaceId": "dev",
                                              "groupName": "G"},
                  json.dumps([{"ip": "10.0.0.9", "port": 9}]))
        self.assertEqual(self.list("s")["hosts"], [])
        self.assertEqual(self.list("s", namespaceId="dev")["hosts"], [])
        hosts = self.list("s", namespaceId="dev", groupName="G")["hosts"]
        self.assertEqual([h["ip"] for h in hosts], ["10.0.0.9"])
        # "group@@name" is the same service.
        hosts = self.list("G@@s", namespaceId="dev")["hosts"]
        self.assertEqual([h["ip"] for h in hosts], ["10.0.0.9"])

    def test_behaviour_status_body_delay_and_log(self):
        self.call("POST", "/fake/behaviour", None, json.dumps({"status": 500}))
        status, _ = self.call("GET", "/nacos/v1/ns/instance/list", {"serviceName": "s"})
        self.assertEqual(status, 500)
        self.call("POST", "/fake/behaviour", None, json.dumps({"body": "not json"}))
        self.assertEqual(self.call("GET", "/nacos/v1/ns/instance/list", {"serviceName": "s"}),
                         (200, "not json"))
        self.call("POST", "/fake/behaviour", None, json.dumps({"delay_ms": 300}))
        start = time.monotonic()
        self.call("GET", "/nacos/v1/ns/instance/list", {"serviceName": "s"})
        self.assertGreaterEqual(time.monotonic() - start, 0.3)
        self.call("POST", "/fake/behaviour", None, json.dumps({"bodies": ["a", "b"]}))
        answers = [self.call("GET", "/nacos/v1/ns/instance/list", {"serviceName": "s"})[1]
                   for _ in range(3)]
        self.assertEqual(answers, ["b", "a", "b"])
        self.call("POST", "/fake/behaviour", None, "{}")
        _, log = self.call("GET", "/fake/log")
        log = json.loads(log)
        self.assertEqual(len(log), 6)
        self.assertEqual(log[0]["path"], "/nacos/v1/ns/instance/list")
        self.assertEqual(log[0]["query"]["serviceName"], "s")
        self.call("POST", "/fake/log/clear")
        self.assertEqual(json.loads(self.call("GET", "/fake/log")[1]), [])

    def test_login_without_auth_configured_is_refused(self):
        status, _ = self.call("POST", "/nacos/v1/auth/login",
                              {"username": "nacos", "password": "nacos"})
        self.assertEqual(status, 403)


class AuthTest(FakeNacosTest):
    auth = ("nacos", "secret")

    def test_list_needs_a_token_from_login(self):
        status, body = self.call("GET", "/nacos/v1/ns/instance/list", {"serviceName": "s"})
        self.assertEqual((status, body), (403, "token invalid!"))
        status, _ = self.call("POST", "/nacos/v1/auth/login",
                              {"username": "nacos", "password": "wrong"})
        self.assertEqual(status, 403)
        status, body = self.call("POST", "/nacos/v1/auth/login",
                                 {"username": "nacos", "password": "secret"})
        self.assertEqual(status, 200)
        login = json.loads(body)
        self.assertEqual(login["tokenTtl"], 18000)
        token = login["accessToken"]
        self.assertEqual(self.list("s", accessToken=token)["hosts"], [])
        # Form-encoded credentials work too.
        req = urllib.request.Request(
            "http://127.0.0.1:%d/nacos/v1/auth/login" % self.port, method="POST",
            data=b"username=nacos&password=secret",
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(req, timeout=5) as r:
            self.assertEqual(r.status, 200)
        # Expired tokens are refused.
        self.call("POST", "/fake/behaviour", None, json.dumps({"expire_tokens": True}))
        status, _ = self.call("GET", "/nacos/v1/ns/instance/list",
                              {"serviceName": "s", "accessToken": token})
        self.assertEqual(status, 403)


if __name__ == "__main__":
    unittest.main()
