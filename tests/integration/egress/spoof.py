#!/usr/bin/env python3
"""spoof.py: a guest root that forges its source, and the probes that
watch for what leaks (tests only; test_egress_standalone.sh).

  spoof.py send IFACE TAPMAC MARK
      from IFACE (the guest's NIC, AF_PACKET) send raw frames:
      a) a DNS query to 172.16.0.1:53 from 198.51.100.91:9001 whose name
         carries MARK;
      b) a TCP SYN to 198.51.100.7:9000 from 198.51.100.92:47999;
      c) UDP to 198.51.100.91:9000 from the guest's address but a foreign
         source MAC, MARK in the payload;
      d) an ARP request from the guest's MAC claiming that 172.16.0.2 is at
         the foreign MAC (ARP with a foreign sender).
      Each is sent 3 times.
  spoof.py sniff SECONDS MARK OUT
      every frame on every link of this namespace for SECONDS: writes to
      OUT one line per frame that carries MARK, comes from or goes to
      198.51.100.91/.92, or is TCP from port 47999.
  spoof.py listen ADDR PORT SECONDS OUT
      a UDP socket on ADDR:PORT: each datagram's bytes (repr) to OUT.
"""
import socket
import struct
import sys
import time

GUEST_MAC = bytes.fromhex("0600ac100002")
FOREIGN_MAC = bytes.fromhex("020000000099")
GUEST = "172.16.0.2"


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 0x1234, 0x4000, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def udp(src, dst, sport, dport, data):
    u = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 17, len(u))
    c = csum(pseudo + u) or 0xFFFF
    return ipv4(src, dst, 17, u[:6] + struct.pack("!H", c) + u[8:])


def tcp_syn(src, dst, sport, dport):
    t = struct.pack("!HHIIBBHHH", sport, dport, 0x1000, 0, 5 << 4, 0x02, 64240, 0, 0)
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(t))
    c = csum(pseudo + t)
    return ipv4(src, dst, 6, t[:16] + struct.pack("!H", c) + t[18:])


def dns_query(name):
    q = struct.pack("!HHHHHH", 0x4242, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", 1, 1)


def eth(dst, src, etype, payload):
    return dst + src + struct.pack("!H", etype) + payload


def arp_claim(sender_mac, sender_ip, target_ip):
    return struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, sender_mac,
                       socket.inet_aton(sender_ip), b"\0" * 6, socket.inet_aton(target_ip))


def send(iface, tapmac, mark):
    tap = bytes.fromhex(tapmac.replace(":", ""))
    if len(tap) != 6:
        sys.exit("spoof.py: bad MAC %r" % tapmac)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    frames = [
        eth(tap, GUEST_MAC, 0x0800,
            udp("198.51.100.91", "172.16.0.1", 9001, 53, dns_query(mark + ".allowed.test"))),
        eth(tap, GUEST_MAC, 0x0800, tcp_syn("198.51.100.92", "198.51.100.7", 47999, 9000)),
        eth(tap, FOREIGN_MAC, 0x0800,
            udp(GUEST, "198.51.100.91", 9000, 9000, mark.encode() + b"-foreign-mac")),
        eth(b"\xff" * 6, GUEST_MAC, 0x0806, arp_claim(FOREIGN_MAC, GUEST, "172.16.0.1")),
    ]
    for _ in range(3):
        for f in frames:
            s.send(f)
        time.sleep(0.05)


def sniff(seconds, mark, out):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
    s.settimeout(0.2)
    bad = {socket.inet_aton("198.51.100.91"), socket.inet_aton("198.51.100.92")}
    end = time.time() + float(seconds)
    with open(out, "w") as o:
        while time.time() < end:
            try:
                f, addr = s.recvfrom(65535)
            except socket.timeout:
                continue
            ip = f[14:]
            hit = mark.encode() in f
            if len(f) >= 34 and f[12:14] == b"\x08\x00":
                ihl = (ip[0] & 15) * 4
                hit |= ip[12:16] in bad or ip[16:20] in bad
                hit |= ip[9] == 6 and len(ip) >= ihl + 2 and ip[ihl:ihl + 2] == b"\xbb\x7f"
            if hit:
                o.write("%s %s\n" % (addr[0], f[:80].hex()))
                o.flush()


def listen(addr, port, seconds, out):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, int(port)))
    s.settimeout(0.2)
    end = time.time() + float(seconds)
    with open(out, "w") as o:
        while time.time() < end:
            try:
                d, a = s.recvfrom(65535)
            except socket.timeout:
                continue
            o.write("%s %r\n" % (a, d))
            o.flush()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "send":
        send(*sys.argv[2:5])
    elif cmd == "sniff":
        sniff(*sys.argv[2:5])
    elif cmd == "listen":
        listen(*sys.argv[2:6])
    else:
        sys.exit("usage: see the head of spoof.py")
