#!/usr/bin/env python3
"""The network tests' fake internet: every service in one process, each on an
address of its own inside the `fakenet` namespace (tests/integration/netlib.sh).

  198.51.100.80:80    HTTP; answers "fake:<Host>" (allowed.test and other.test
                      share this address), or files under DOCROOT/<Host>/ when
                      that directory exists (a package index, a git repository)
  198.51.100.43:443   HTTPS with a certificate from the test CA (secure.test,
                      other.test)
  198.51.100.90:9000  TCP: a banner line, then echoes
  198.51.100.91:9001  UDP echo
  169.254.169.254:80  the "metadata" server: answers "metadata-secret"
Each service appends one line per connection to LOG (service, peer)."""
import http.server, os, socket, socketserver, ssl, sys, threading

docroot, log_path, cert, key = sys.argv[1:5]
lock = threading.Lock()


def note(service, peer):
    with lock, open(log_path, "a") as f:
        f.write(f"{service} {peer[0]}\n")


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def __init__(self, *a, **kw):
        super().__init__(*a, directory=docroot, **kw)

    def log_message(self, *a):
        pass

    def translate_path(self, path):
        host = (self.headers.get("Host") or "").split(":")[0]
        base = os.path.join(docroot, os.path.basename(host))
        self.directory = base
        return super().translate_path(path)

    def do_GET(self):
        note(self.server.name, self.client_address)
        host = (self.headers.get("Host") or "").split(":")[0]
        if self.server.name == "metadata":
            return self.reply(b"metadata-secret\n")
        if host and os.path.isdir(os.path.join(docroot, os.path.basename(host))):
            return super().do_GET()
        self.reply(f"fake:{host}\n".encode())

    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class HTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def http_server(name, addr, port, tls=False):
    srv = HTTPServer((addr, port), Handler)
    srv.name = name
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        # busybox wget's own TLS (the minimal image has no openssl to call)
        # offers only suites that Python's default server list leaves out.
        ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()


class Echo(socketserver.StreamRequestHandler):
    def handle(self):
        note("tcp9000", self.client_address)
        self.wfile.write(b"banner pin\n")
        while True:
            data = self.request.recv(65536)
            if not data:
                return
            self.request.sendall(data)


class TCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def udp_echo(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    while True:
        data, peer = s.recvfrom(65536)
        note("udp9001", peer)
        s.sendto(data, peer)


http_server("http", "198.51.100.80", 80)
http_server("https", "198.51.100.43", 443, tls=True)
http_server("metadata", "169.254.169.254", 80)
tcp = TCPServer(("198.51.100.90", 9000), Echo)
threading.Thread(target=tcp.serve_forever, daemon=True).start()
threading.Thread(target=udp_echo, args=("198.51.100.91", 9001), daemon=True).start()
with open(os.path.join(os.path.dirname(log_path), "fakenet.ready"), "w") as f:
    f.write("ready\n")
threading.Event().wait()
