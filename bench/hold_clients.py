#!/usr/bin/env python3
"""Holds many client connections open against a proxy, for bench/compare.sh.

  hold_clients.py idle PORT COUNT        COUNT keep-alive connections, each after one
                                         GET /hello answered in full, then left idle.
  hold_clients.py slowloris PORT COUNT   COUNT connections that trickle a request head one
                                         byte every INTERVAL seconds and never finish it;
                                         a connection the proxy closes is opened again.

Prints "ready N" on stdout once COUNT connections are established (idle: answered), then
keeps them until the process gets SIGTERM. Env: INTERVAL (slowloris,
seconds between bytes, default 2). Loopback only; single thread, non-blocking sockets.
"""
import os
import selectors
import signal
import socket
import sys
import time

REQUEST = b"GET /hello HTTP/1.1\r\nHost: bench\r\n\r\n"
SLOW_HEAD = b"GET /hello HTTP/1.1\r\nHost: bench\r\n" + b"X-Slow: " + b"a" * 4000


def connect(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    return s


def hold_idle(port, count, sel):
    pending = {}
    opened = 0
    ready = 0
    while ready < count:
        while opened < count and len(pending) < 256:
            s = connect(port)
            pending[s] = b""
            sel.register(s, selectors.EVENT_WRITE)
            opened += 1
        for key, events in sel.select(timeout=5):
            s = key.fileobj
            if events & selectors.EVENT_WRITE:
                s.send(REQUEST)
                sel.modify(s, selectors.EVENT_READ)
                continue
            data = s.recv(65536)
            if not data:
                sys.exit("hold_clients: the proxy closed a connection before answering")
            pending[s] += data
            if pending[s].endswith(b"hello world\n"):
                sel.unregister(s)
                del pending[s]
                held.append(s)
                ready += 1
    print("ready", ready, flush=True)


def hold_slowloris(port, count, sel):
    interval = float(os.environ.get("INTERVAL", "2"))
    conns = {}  # socket -> bytes sent

    def open_one():
        s = connect(port)
        conns[s] = 0
        sel.register(s, selectors.EVENT_READ)

    for _ in range(count):
        open_one()
    print("ready", count, flush=True)
    next_tick = time.monotonic()
    while True:
        timeout = max(0.0, next_tick - time.monotonic())
        for key, _ in sel.select(timeout=timeout):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:  # closed by the proxy (timeout): a real slowloris comes back
                sel.unregister(s)
                s.close()
                del conns[s]
                open_one()
        if time.monotonic() >= next_tick:
            next_tick += interval
            for s, sent in list(conns.items()):
                if sent < len(SLOW_HEAD):
                    try:
                        s.send(SLOW_HEAD[sent:sent + 1])
                        conns[s] = sent + 1
                    except OSError:
                        pass


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("idle", "slowloris"):
        sys.exit(__doc__)
    mode, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sel = selectors.DefaultSelector()
    if mode == "idle":
        hold_idle(port, count, sel)
        while True:
            signal.pause()
    else:
        hold_slowloris(port, count, sel)


held = []
if __name__ == "__main__":
    main()
