#!/usr/bin/env python3
"""rr_proxy PORT BACKEND...: a plain TCP load balancer on 127.0.0.1:PORT.

Each accepted connection goes to the next backend (host:port) in turn and
its bytes are pumped both ways until either side closes; nothing about
HTTP is looked at.  Prints "ready" once listening.  The cluster tests put
it in front of every coved node, as a user's load balancer would be.
"""
import itertools
import socket
import sys
import threading


def pump(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    for s in (dst, src):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    port = int(sys.argv[1])
    backends = itertools.cycle([(h, int(p)) for h, p in (a.rsplit(":", 1) for a in sys.argv[2:])])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(128)
    print("ready", flush=True)
    while True:
        c, _ = ls.accept()
        try:
            u = socket.create_connection(next(backends), timeout=5)
            u.settimeout(None)
        except OSError:
            c.close()
            continue
        for a, b in ((c, u), (u, c)):
            threading.Thread(target=pump, args=(a, b), daemon=True).start()


main()
