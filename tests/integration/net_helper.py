#!/usr/bin/env python3
"""Host-side helpers for the virtio-net tests (tests/integration/test_vmm_net.sh).

  (recv and send create READY, when given as a last argument, once listening)

  net_helper.py recv PORT OUT       accept one TCP connection on 172.16.0.1:PORT,
                                    read to EOF, write "<sha256> <bytes>" to OUT
  net_helper.py send PORT FILE      accept one connection on 172.16.0.1:PORT and
                                    send FILE, then close
  net_helper.py push HOST PORT FILE connect to HOST:PORT (retrying for 60 s), send
                                    FILE, close
  net_helper.py exec-tap NAME CMD.. open the TAP NAME (IFF_TAP|IFF_NO_PI|IFF_VNET_HDR)
                                    as fd 3, not close-on-exec, and exec CMD (how
                                    a launcher hands cove-vmm --net fd=3)
"""
import fcntl
import hashlib
import os
import socket
import struct
import sys
import time

HOST = "172.16.0.1"


READY = None


def listener(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((HOST, port))
    s.listen(1)
    s.settimeout(600)
    if READY:
        open(READY, "w").close()
    return s


def recv(port, out):
    conn, _ = listener(port).accept()
    conn.settimeout(600)
    h, n = hashlib.sha256(), 0
    while True:
        d = conn.recv(1 << 16)
        if not d:
            break
        h.update(d)
        n += len(d)
    with open(out + ".tmp", "w") as f:
        f.write("%s %d\n" % (h.hexdigest(), n))
    os.rename(out + ".tmp", out)


def send(port, path):
    conn, _ = listener(port).accept()
    with open(path, "rb") as f:
        conn.sendall(f.read())
    conn.close()


def push(host, port, path):
    deadline = time.time() + 60
    while True:
        try:
            s = socket.create_connection((host, port), timeout=10)
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.5)
    s.settimeout(600)
    with open(path, "rb") as f:
        s.sendall(f.read())
    s.close()


def exec_tap(name, argv):
    TUNSETIFF = 0x400454CA
    IFF_TAP, IFF_NO_PI, IFF_VNET_HDR = 0x0002, 0x1000, 0x4000
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI | IFF_VNET_HDR))
    if fd != 3:
        os.dup2(fd, 3)
        os.close(fd)
    os.set_inheritable(3, True)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    op = sys.argv[1]
    if op in ("recv", "send") and len(sys.argv) > 4:
        READY = sys.argv[4]
    if op == "recv":
        recv(int(sys.argv[2]), sys.argv[3])
    elif op == "send":
        send(int(sys.argv[2]), sys.argv[3])
    elif op == "push":
        push(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif op == "exec-tap":
        exec_tap(sys.argv[2], sys.argv[3:])
    else:
        sys.exit("unknown op " + op)
