#!/usr/bin/env python3
"""envd_start.py SOCK SANDBOX TOKEN N [CMD]: runs `echo run-I` (or the
shell command CMD) N times through coved's envd (process.Process/Start, a
Connect server stream over the Unix socket) one after another; prints how
many ended with exit status 0."""
import http.client
import json
import socket
import struct
import sys


class UnixConn(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("coved", timeout=120)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(120)
        self.sock.connect(self.unix_path)


def run(sock, sid, tok, i, cmd):
    body = json.dumps({"process": {"cmd": "/bin/sh", "args": ["-c", cmd or "echo run-%d" % i]}}).encode()
    c = UnixConn(sock)
    c.request("POST", "/process.Process/Start", struct.pack(">BI", 0, len(body)) + body,
              {"E2b-Sandbox-Id": sid, "X-Access-Token": tok,
               "Content-Type": "application/connect+json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status == 200 and b'"exitCode":0' in data


def main():
    sock, sid, tok, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cmd = sys.argv[5] if len(sys.argv) > 5 else None
    print(sum(1 for i in range(n) if run(sock, sid, tok, i, cmd)))


main()
