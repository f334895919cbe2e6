"""A server for inside a sandbox (tests/e2b/ports.mjs writes it there and
runs `python3 ports_guest.py PORT`), standard library only:

- a websocket upgrade (RFC 6455): every text or binary message is echoed,
  a ping answered, a close echoed;
- GET /sse: three server-sent events one second apart, then the end;
- anything else: 200 with the names of the request headers it got, so the
  test sees what coved passed on.
"""
import base64
import hashlib
import socket
import struct
import sys
import threading
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Conn:
    def __init__(self, sock, rest=b""):
        self.sock = sock
        self.buf = rest

    def need(self, n):
        while len(self.buf) < n:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError
            self.buf += data
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def read_head(sock):
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(4096)
        if not data or len(buf) > 65536:
            return None, b""
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def frame(op, data):
    head = bytes([0x80 | op])
    if len(data) < 126:
        head += bytes([len(data)])
    elif len(data) < 65536:
        head += bytes([126]) + struct.pack(">H", len(data))
    else:
        head += bytes([127]) + struct.pack(">Q", len(data))
    return head + data


def websocket(conn, key):
    accept = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
    conn.sock.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                       "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n"
                       % accept).encode())
    while True:
        b0, b1 = conn.need(2)
        op, n = b0 & 15, b1 & 127
        if n == 126:
            n = struct.unpack(">H", conn.need(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", conn.need(8))[0]
        mask = conn.need(4) if b1 & 128 else b"\0\0\0\0"
        data = bytes(x ^ mask[i % 4] for i, x in enumerate(conn.need(n)))
        if op == 8:
            conn.sock.sendall(frame(8, data[:2]))
            return
        if op == 9:
            conn.sock.sendall(frame(10, data))
        elif op in (1, 2):
            conn.sock.sendall(frame(op, data))


def events(sock):
    sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n")
    for i in range(3):
        sock.sendall(("data: %d\n\n" % i).encode())
        time.sleep(1)


def serve(sock):
    try:
        head, rest = read_head(sock)
        if head is None:
            return
        lines = head.split("\r\n")
        path = lines[0].split(" ")[1]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("upgrade", "").lower() == "websocket":
            websocket(Conn(sock, rest), headers.get("sec-websocket-key", ""))
        elif path.startswith("/sse"):
            events(sock)
        else:
            body = ("headers " + ",".join(sorted(headers))).encode()
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                         % len(body) + body)
    except (EOFError, OSError):
        pass
    finally:
        sock.close()


def main():
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("0.0.0.0", int(sys.argv[1])))
    lsock.listen(64)
    while True:
        sock, _ = lsock.accept()
        threading.Thread(target=serve, args=(sock,), daemon=True).start()


main()
