#!/usr/bin/python3
"""Cove's code interpreter: the routes of E2B's code interpreter on port 49999.

Runs in the guest of the template code-interpreter-v1 (docs/e2b-compat.md,
"Code interpreter"), started by the template's start command before the
snapshot, so a sandbox from it has a Python kernel ready.

    POST   /execute               {code, context_id?, language?, env_vars?, timeout?}
                                  -> 200, JSON lines: stdout, stderr, result,
                                  error, number_of_executions, end_of_execution
    POST   /contexts              {language?, cwd?} -> {id, language, cwd}
    GET    /contexts              -> [{id, language, cwd}]
    DELETE /contexts/ID           -> 204
    POST   /contexts/ID/restart   -> 204
    GET    /health                -> 200 OK

One kernel per context (kernel.py): Python through ipykernel, spoken to over
its ZeroMQ sockets with jupyter_client's Session (kernel_python.py),
JavaScript through jskernel.js, one node process per context, JSON lines on a
pipe (kernel_js.py).  A context runs one
execution at a time; others queue.  Every wait has a deadline: a kernel's
start (COVE_CI_BOOT_S), an execution (its "timeout", at most COVE_CI_EXEC_S),
the stop after an interrupt (COVE_CI_INTERRUPT_S, then the kernel is killed
and started again).  A client that goes away interrupts its execution.
"""

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kernel import BOOT_S, RUN_DIR, error_line, log
from kernel_js import JsKernel
from kernel_python import PyKernel

HOST = os.environ.get("COVE_CI_HOST", "127.0.0.1")
PORT = int(os.environ.get("COVE_CI_PORT", "49999"))
EXEC_S = float(os.environ.get("COVE_CI_EXEC_S", "3600"))
PRESTART = [s for s in os.environ.get("COVE_CI_PRESTART", "python").split(",") if s]
WARM_IMPORTS = [s for s in os.environ.get("COVE_CI_WARM", "numpy,pandas,matplotlib.pyplot").split(",") if s]
MAX_BODY = 16 << 20
MAX_CONTEXTS = 32
MAX_ENV = 1024
IDLE_CONN_S = 300  # a kept-alive connection with no request
KEEPALIVE_S = 2  # the longest silence of an /execute stream
LANGUAGES = {"python": "python", "python3": "python", "js": "javascript", "javascript": "javascript"}


class HTTPError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Stream:
    """The chunked JSON-lines body of one /execute, and whether its client left."""

    def __init__(self, handler):
        self.h = handler
        self.gone = False
        self.last = time.monotonic()

    def send(self, obj):
        if self.gone:
            return
        data = (json.dumps(obj) + "\n").encode()  # ASCII: a lone surrogate cannot break it
        try:
            self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.last = time.monotonic()
        except OSError:
            self.gone = True

    def left(self):
        """True once the client has closed its side (or the socket failed).

        Called often while an execution runs.  After KEEPALIVE_S of silence
        it sends {"type": "keepalive"} (the SDKs skip types they do not
        know): a relay between the client and here (coved's port
        forwarding) may learn that its client left only when it writes to
        it, and then closes this side."""
        if not self.gone and time.monotonic() - self.last > KEEPALIVE_S:
            self.send({"type": "keepalive"})
        if not self.gone:
            sock = self.h.connection
            try:
                p = select.poll()
                p.register(sock, select.POLLIN)
                if p.poll(0) and sock.recv(1, socket.MSG_PEEK) == b"":
                    self.gone = True
            except OSError:
                self.gone = True
        return self.gone

    def end(self):
        if not self.gone:
            try:
                self.h.wfile.write(b"0\r\n\r\n")
            except OSError:
                self.gone = True


class Context:
    def __init__(self, language, cwd):
        self.id = str(uuid.uuid4())
        self.language = language
        self.cwd = cwd
        self.exec_lock = threading.Lock()  # one execution at a time
        self.mu = threading.Lock()  # self.kernel
        self.kernel = self.new_kernel()

    def new_kernel(self):
        k = (PyKernel if self.language == "python" else JsKernel)(self.cwd)
        k.start()
        return k

    def json(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd}

    def replace_kernel(self, reason, start, locked=False):
        """Ends the kernel (and starts a new one when start).  Its sockets are
        released here when no execution holds them, else by that execution."""
        with self.mu:
            old = self.kernel
            self.kernel = self.new_kernel() if start else None
        if old is None:
            return
        old.kill(reason)
        if locked:
            old.release()
        elif self.exec_lock.acquire(blocking=False):
            old.release()
            self.exec_lock.release()

    def current(self):
        """The kernel to run on (exec_lock held): a dead one is replaced (its
        death was told by the execution that saw it, or it died idle)."""
        with self.mu:
            k = self.kernel
        if k and k.ready.is_set() and (k.boot_error or k.died()):
            self.replace_kernel(None, True, locked=True)
            with self.mu:
                k = self.kernel
        return k

    def execute(self, code, env, stream, timeout_s):
        deadline = time.monotonic() + timeout_s
        while not self.exec_lock.acquire(timeout=0.25):
            if stream.left():
                return
            if time.monotonic() > deadline:
                stream.send(error_line("TimeoutError", "the context's previous execution did not end in time"))
                return
        k = None
        try:
            k = self.current()
            if k is None:
                stream.send(error_line("ContextRestarted", "the context was removed"))
                return
            if k.wait_ready(stream, deadline):
                k.run(code, env, stream, deadline, timeout_s)
            if k.count:
                stream.send({"type": "number_of_executions", "execution_count": k.count})
        finally:
            with self.mu:
                replaced = k is not None and k is not self.kernel
            if replaced:
                k.release()
            self.exec_lock.release()


class Contexts:
    def __init__(self):
        self.mu = threading.Lock()
        self.by_id = {}
        self.defaults = {}  # language -> context id

    def create(self, language, cwd, default=False):
        with self.mu:
            if default and language in self.defaults:
                return self.by_id[self.defaults[language]]
            if len(self.by_id) >= MAX_CONTEXTS:
                raise HTTPError(429, "too many contexts (%d): remove one first" % MAX_CONTEXTS)
            c = Context(language, cwd)
            self.by_id[c.id] = c
            if default:
                self.defaults[language] = c.id
            return c

    def get(self, cid):
        with self.mu:
            c = self.by_id.get(cid)
        if not c:
            raise HTTPError(404, "context '%s' not found" % cid)
        return c

    def remove(self, cid):
        with self.mu:
            c = self.by_id.pop(cid, None)
            if c:
                self.defaults = {k: v for k, v in self.defaults.items() if v != cid}
        if not c:
            raise HTTPError(404, "context '%s' not found" % cid)
        c.replace_kernel("the context was removed", False)

    def list(self):
        with self.mu:
            return [c.json() for c in self.by_id.values()]


CONTEXTS = Contexts()
DEFAULT_CWD = os.environ.get("HOME") or "/"


def language_of(v):
    if v is None or v == "":
        return "python"
    if not isinstance(v, str) or v.lower() not in LANGUAGES:
        raise HTTPError(400, "language %s is not supported (python, javascript)" % json.dumps(v)[:80])
    return LANGUAGES[v.lower()]


def env_of(v):
    if v is None:
        return {}
    if not isinstance(v, dict) or len(v) > MAX_ENV:
        raise HTTPError(400, "env_vars must be an object of at most %d strings" % MAX_ENV)
    for k, val in v.items():
        if not k or "=" in k or "\0" in k or not isinstance(val, str) or "\0" in val:
            raise HTTPError(400, "env_vars: bad variable %s" % json.dumps(k)[:80])
    return v


CONTEXT_PATH = re.compile(r"^/contexts/([A-Za-z0-9-]{1,64})(/restart)?$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = IDLE_CONN_S
    server_version = "cove-code-interpreter"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, obj=None):
        body = b"" if obj is None else (json.dumps(obj) + "\n").encode()
        self.send_response(status)
        if obj is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        if self.headers.get("Transfer-Encoding"):
            raise HTTPError(411, "a body needs Content-Length")
        try:
            n = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise HTTPError(400, "bad Content-Length") from None
        if n < 0 or n > MAX_BODY:
            raise HTTPError(413, "the body is over %d bytes" % MAX_BODY)
        raw = self.rfile.read(n) if n else b""
        if len(raw) != n:
            raise HTTPError(400, "the body ended early")
        if not raw.strip():
            return {}
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            raise HTTPError(400, "the body is not JSON") from None
        if not isinstance(obj, dict):
            raise HTTPError(400, "the body is not a JSON object")
        return obj

    def route(self, method):
        path = self.path.split("?", 1)[0]
        try:
            if method == "GET" and path == "/health":
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", "3")
                self.end_headers()
                self.wfile.write(b"OK\n")
            elif method == "POST" and path == "/execute":
                self.execute(self.body())
            elif method == "POST" and path == "/contexts":
                b = self.body()
                cwd = b.get("cwd") or DEFAULT_CWD
                if not isinstance(cwd, str) or not os.path.isdir(cwd):
                    raise HTTPError(400, "cwd %s is not a folder" % json.dumps(cwd)[:200])
                self.reply(200, CONTEXTS.create(language_of(b.get("language")), cwd).json())
            elif method == "GET" and path == "/contexts":
                self.reply(200, CONTEXTS.list())
            elif (m := CONTEXT_PATH.match(path)) and method == "DELETE" and not m.group(2):
                self.body()
                CONTEXTS.remove(m.group(1))
                self.reply(204)
            elif m and method == "POST" and m.group(2):
                self.body()
                CONTEXTS.get(m.group(1)).replace_kernel("the context was restarted", True)
                self.reply(204)
            else:
                raise HTTPError(404, "no route %s %s" % (method, path[:200]))
        except HTTPError as e:
            self.close_connection = e.status in (400, 411, 413)
            self.reply(e.status, {"code": e.status, "message": str(e)})

    def execute(self, b):
        code = b.get("code")
        if not isinstance(code, str):
            raise HTTPError(400, "code must be a string")
        env = env_of(b.get("env_vars"))
        timeout_s = EXEC_S
        t = b.get("timeout")
        if t is not None:
            if not isinstance(t, (int, float)) or isinstance(t, bool) or t <= 0:
                raise HTTPError(400, "timeout must be a positive number of seconds")
            timeout_s = min(float(t), EXEC_S)
        cid = b.get("context_id")
        if cid:
            if not isinstance(cid, str):
                raise HTTPError(400, "context_id must be a string")
            if b.get("language"):
                raise HTTPError(400, "give context_id or language, not both")
            ctx = CONTEXTS.get(cid)
        else:
            ctx = CONTEXTS.create(language_of(b.get("language")), DEFAULT_CWD, default=True)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        stream = Stream(self)
        try:
            ctx.execute(code, env, stream, timeout_s)
        except Exception as e:  # noqa: BLE001 - the stream still ends
            log("execute: %s: %s" % (type(e).__name__, e))
            stream.send(error_line("InternalError", "code interpreter: %s: %s" % (type(e).__name__, e)))
        stream.send({"type": "end_of_execution"})
        stream.end()
        if stream.gone:
            self.close_connection = True

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_DELETE(self):
        self.route("DELETE")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main():
    os.makedirs(RUN_DIR, mode=0o700, exist_ok=True)
    t0 = time.monotonic()
    # The kernels the template's snapshot holds started, the Python one
    # with the heavy modules imported (not bound to names): a sandbox's
    # first execution is warm.
    for lang in PRESTART:
        ctx = CONTEXTS.create(language_of(lang), DEFAULT_CWD, default=True)
        k = ctx.kernel
        if not k.ready.wait(BOOT_S + 10) or k.boot_error:
            log("the default %s kernel did not start: %s" % (ctx.language, k.boot_error or "timed out"))
            sys.exit(1)
        if isinstance(k, PyKernel) and WARM_IMPORTS:
            warm = "for _m in %s:\n    try:\n        __import__(_m)\n    except Exception:\n        pass\ndel _m\n"
            if not k.silent(warm % json.dumps(WARM_IMPORTS), time.monotonic() + BOOT_S):
                log("warming the python kernel timed out")
    if "javascript" not in PRESTART:
        # node read once, so the template's snapshot holds it in the page
        # cache and a sandbox's first JavaScript context starts sooner.
        try:
            subprocess.run(["node", "-e", "0"], timeout=BOOT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            log("node -e 0: %s" % e)
    srv = Server((HOST, PORT), Handler)
    log("listening on %s:%d (kernels ready in %.1f s)" % (HOST, PORT, time.monotonic() - t0))

    def stop(*_):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        srv.serve_forever()
    finally:
        for c in CONTEXTS.list():
            CONTEXTS.remove(c["id"])


if __name__ == "__main__":
    main()
