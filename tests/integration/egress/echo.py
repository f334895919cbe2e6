#!/usr/bin/env python3
"""echo.py: the credential-injection tests' upstream (tests only).

HTTP on ADDR:80 and HTTPS on ADDR:443 (CERT/KEY from a test CA that only
the proxy trusts).  Every request is answered with one JSON object about
what arrived: method, path, host, the SHA-256 of its Authorization header
(never the value: the answer goes back into the sandbox), the X-Account
header, the header names; each request's full headers are appended to LOG
(outside the sandbox) as one JSON line.  Paths under /git/ are files from
DOCROOT (git's dumb HTTP protocol), served only with the Authorization
whose SHA-256 is in DOCROOT/.auth (401 otherwise).  Writes READY when up.

It is also a front end that routes by name, as a CDN or PaaS does: the
authority of an absolute-form target (any scheme) wins, else Host.  A
request for evil.test is the attacker's site: it goes to LOG.evil (name,
path and the Authorization's SHA-256, never the value) and is answered
{"vhost": "evil"}.
Usage: echo.py ADDR CERT KEY LOG DOCROOT READY"""
import hashlib, http.server, json, os, socketserver, ssl, sys, threading, urllib.parse

addr, cert, key, log_path, docroot, ready = sys.argv[1:7]
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        auth = self.headers.get_all("Authorization") or []
        sha = hashlib.sha256(auth[0].encode()).hexdigest() if auth else None
        name = (self.headers.get("Host") or "")
        if "://" in self.path:
            name = urllib.parse.urlsplit(self.path).netloc
        name = name.rsplit("@", 1)[-1].split(":")[0].lower()
        if name == "evil.test":
            with lock, open(log_path + ".evil", "a") as f:
                f.write(json.dumps({"name": name, "path": self.path, "n_auth": len(auth),
                                    "auth_sha256": sha}) + "\n")
            return self.answer(200, b'{"vhost": "evil"}\n')
        with lock, open(log_path, "a") as f:
            f.write(json.dumps({"tls": self.server.tls, "method": self.command,
                                "path": self.path, "headers": self.headers.items()}) + "\n")
        if self.path.startswith("/git/"):
            want = open(os.path.join(docroot, ".auth")).read().strip()
            got = hashlib.sha256(auth[0].encode()).hexdigest() if len(auth) == 1 else ""
            if got != want:
                return self.answer(401, b"unauthorized\n", "text/plain")
            p = os.path.normpath(os.path.join(docroot, self.path[5:].split("?")[0].lstrip("/")))
            if not p.startswith(docroot) or not os.path.isfile(p):
                return self.answer(404, b"no such file\n", "text/plain")
            return self.answer(200, open(p, "rb").read(), "application/octet-stream")
        out = {"method": self.command, "path": self.path, "host": self.headers.get("Host"),
               "tls": self.server.tls, "n_auth": len(auth),
               "auth_sha256": sha,
               "account": self.headers.get("X-Account"), "body_len": len(body),
               "names": [k.lower() for k in self.headers.keys()]}
        self.answer(200, (json.dumps(out, sort_keys=True) + "\n").encode())

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(port, tls):
    srv = Server((addr, port), Handler)
    srv.tls = tls
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()


serve(80, False)
serve(443, True)
with open(ready, "w") as f:
    f.write("ready\n")
threading.Event().wait()
