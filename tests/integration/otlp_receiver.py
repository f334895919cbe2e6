#!/usr/bin/env python3
"""otlp_receiver.py PORT DIR: an OTLP/HTTP JSON collector for test_trace.sh.

POST /v1/traces: checks the ExportTraceServiceRequest's schema (ids in
lowercase hex of 32 and 16 characters, not all zero; times as strings of
nanoseconds for coved's spans, start <= end; attributes as key and typed
value, 64-bit integers as strings; events with a time and a name) and
appends each span, with its resource's service.name, as one JSON line to
DIR/spans.jsonl; a bad request is answered 400 and its reason appended to
DIR/errors.  The Authorization header each request sent goes to DIR/auth.
While DIR/slow exists, every answer comes after 10 s.
"""
import gzip
import json
import os
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, DIR = int(sys.argv[1]), sys.argv[2]
HEX = re.compile(r"^[0-9a-f]+$")
NANOS = re.compile(r"^[0-9]{1,20}$")


def hex_id(v, n, what):
    if not isinstance(v, str) or len(v) != n or not HEX.match(v) or set(v) == {"0"}:
        raise ValueError(f"{what} {v!r} is no {n}-digit lowercase hex id")


def check_value(v, strict):
    if not isinstance(v, dict) or len(v) != 1:
        raise ValueError(f"attribute value {v!r}")
    (k, x), = v.items()
    if k == "intValue":
        if strict and not (isinstance(x, str) and re.match(r"^-?[0-9]+$", x)):
            raise ValueError(f"intValue {x!r} is no string of digits")
    elif k not in ("stringValue", "boolValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"):
        raise ValueError(f"attribute value kind {k}")


def check_attrs(a, strict):
    if not isinstance(a, list):
        raise ValueError("attributes is no list")
    for kv in a:
        if not isinstance(kv.get("key"), str) or not kv["key"]:
            raise ValueError(f"attribute {kv!r} has no key")
        check_value(kv.get("value"), strict)


def check(req):
    spans = []
    for rs in req["resourceSpans"]:
        attrs = rs.get("resource", {}).get("attributes", [])
        check_attrs(attrs, False)
        svc = next((a["value"].get("stringValue") for a in attrs if a["key"] == "service.name"), None)
        strict = svc is not None and svc.startswith("coved")
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                hex_id(s["traceId"], 32, "traceId")
                hex_id(s["spanId"], 16, "spanId")
                if s.get("parentSpanId"):
                    hex_id(s["parentSpanId"], 16, "parentSpanId")
                if not isinstance(s.get("name"), str) or not s["name"]:
                    raise ValueError("a span without a name")
                st, en = s.get("startTimeUnixNano"), s.get("endTimeUnixNano")
                if strict:
                    for t in (st, en):
                        if not isinstance(t, str) or not NANOS.match(t):
                            raise ValueError(f"time {t!r} is no string of nanoseconds")
                    if int(st) > int(en):
                        raise ValueError(f"span {s['name']} ends before it starts")
                check_attrs(s.get("attributes", []), strict)
                for e in s.get("events", []):
                    if strict and not (isinstance(e.get("timeUnixNano"), str) and NANOS.match(e["timeUnixNano"])):
                        raise ValueError(f"event time {e.get('timeUnixNano')!r}")
                    if not e.get("name"):
                        raise ValueError("an event without a name")
                    check_attrs(e.get("attributes", []), strict)
                spans.append(dict(s, service=svc))
    return spans


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if (self.headers.get("Content-Encoding") or "").lower() == "gzip":
            body = gzip.decompress(body)
        return body

    def do_POST(self):
        body = self.read_body()
        if os.path.exists(os.path.join(DIR, "slow")):
            time.sleep(10)
        with open(os.path.join(DIR, "auth"), "a") as f:
            f.write((self.headers.get("Authorization") or "-") + "\n")
        code = 200
        try:
            if self.path != "/v1/traces":
                raise ValueError(f"path {self.path}")
            spans = check(json.loads(body))
            with open(os.path.join(DIR, "spans.jsonl"), "a") as f:
                for s in spans:
                    f.write(json.dumps(s) + "\n")
        except (ValueError, KeyError, TypeError) as e:
            code = 400
            with open(os.path.join(DIR, "errors"), "a") as f:
                f.write(f"{type(e).__name__}: {e}\n")
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")
        except OSError:
            pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
