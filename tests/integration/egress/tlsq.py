#!/usr/bin/env python3
"""tlsq.py IP SNI: a TLS handshake with SNI (no verification); prints
"handshake", "reset" or "error ..."."""
import socket
import ssl
import sys

ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    s = socket.create_connection((sys.argv[1], 443), timeout=8)
    ss = ctx.wrap_socket(s, server_hostname=sys.argv[2])
    print("handshake")
except ConnectionResetError:
    print("reset")
except Exception as e:  # noqa: BLE001 - the test prints what happened
    print("error", type(e).__name__, e)
