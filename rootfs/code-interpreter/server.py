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

One kernel per context: Python through ipykernel (spoken to over its ZeroMQ
sockets with jupyter_client's Session), JavaScript through jskernel.js (one
node process per context, JSON lines on a pipe).  A context runs one
execution at a time; others queue.  Every wait has a deadline: a kernel's
start (COVE_CI_BOOT_S), an execution (its "timeout", at most COVE_CI_EXEC_S),
the stop after an interrupt (COVE_CI_INTERRUPT_S, then the kernel is killed
and started again).  A client that goes away interrupts its execution.
"""

import json
import os
import queue
import re
import secrets
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
HOST = os.environ.get("COVE_CI_HOST", "127.0.0.1")
PORT = int(os.environ.get("COVE_CI_PORT", "49999"))
BOOT_S = float(os.environ.get("COVE_CI_BOOT_S", "300"))
EXEC_S = float(os.environ.get("COVE_CI_EXEC_S", "3600"))
INTERRUPT_S = float(os.environ.get("COVE_CI_INTERRUPT_S", "10"))
PRESTART = [s for s in os.environ.get("COVE_CI_PRESTART", "python").split(",") if s]
WARM_IMPORTS = [s for s in os.environ.get("COVE_CI_WARM", "numpy,pandas,matplotlib.pyplot").split(",") if s]
RUN_DIR = os.environ.get("COVE_CI_RUN_DIR", "/tmp/cove-ci")
MAX_BODY = 16 << 20
MAX_CONTEXTS = 32
MAX_ENV = 1024
MAX_LINE = 64 << 20  # one message of the JavaScript kernel
IDLE_CONN_S = 300  # a kept-alive connection with no request
KEEPALIVE_S = 2  # the longest silence of an /execute stream
LANGUAGES = {"python": "python", "python3": "python", "js": "javascript", "javascript": "javascript"}
# Jupyter's MIME types as E2B's result fields; other types keep their name.
MIME_FIELDS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
}


def log(msg):
    print("code-interpreter: " + msg, file=sys.stderr, flush=True)


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


def error_line(name, value, traceback=""):
    return {"type": "error", "name": name, "value": value, "traceback": traceback}


def tail(path, n=2000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - n))
            return f.read().decode(errors="replace").strip()
    except OSError:
        return ""


class Kernel:
    """What both kinds share: the process, its start in the background, its end.

    Its sockets and pipes belong to one thread at a time: the boot thread
    until ready is set, then the thread holding its context's exec_lock.
    kill() may come from any thread: it ends the process only, and whoever
    owns the kernel then calls release()."""

    language = ""

    def __init__(self, cwd):
        self.cwd = cwd
        self.proc = None
        self.ready = threading.Event()
        self.mu = threading.Lock()  # proc's end, booted, released, end_reason
        self.booted = self.released = False
        self.boot_error = None
        self.end_reason = None  # why the server ended it (restart, removal)
        self.count = 0
        self.started = None  # the execution the kernel has begun (Python)
        self.tag = uuid.uuid4().hex[:12]
        self.log_path = os.path.join(RUN_DIR, "kernel-%s.log" % self.tag)

    def start(self):
        threading.Thread(target=self._boot_thread, daemon=True).start()

    def _boot_thread(self):
        try:
            self.boot(time.monotonic() + BOOT_S)
        except Exception as e:  # noqa: BLE001 - any failure is the boot's error
            self.boot_error = str(e) or type(e).__name__
            log("%s kernel %s did not start: %s" % (self.language, self.tag, self.boot_error))
            self.kill(None)
        with self.mu:
            self.booted = True
        if self.boot_error or self.end_reason:
            self.release()
        self.ready.set()

    def spawn(self, argv, **kw):
        logf = open(self.log_path, "wb")
        try:
            with self.mu:
                if self.end_reason:
                    raise RuntimeError(self.end_reason)
                self.proc = subprocess.Popen(
                    argv, cwd=self.cwd, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True, **kw
                )
        finally:
            logf.close()

    def died(self):
        return self.proc is None or self.proc.poll() is not None

    def death(self):
        """The error line of a kernel that is gone."""
        if self.end_reason:
            return error_line("ContextRestarted", self.end_reason)
        st = self.proc.poll() if self.proc else None
        how = "was killed by signal %d" % -st if st is not None and st < 0 else "exited with status %s" % st
        return error_line(
            "KernelDied",
            "the %s kernel %s; its state is lost and it starts again on the next execution" % (self.language, how),
            tail(self.log_path, 600),
        )

    def interrupt(self):
        if not self.died():
            try:
                os.kill(self.proc.pid, signal.SIGINT)
            except OSError:
                pass

    def kill(self, reason):
        """Ends the process group (any thread)."""
        with self.mu:
            if reason and not self.end_reason:
                self.end_reason = reason
            proc = self.proc
            if proc and proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
        if proc:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                log("kernel %s did not end 5 s after SIGKILL" % self.tag)

    def release(self):
        """Closes sockets and pipes, removes files: by their owner, once it is booted."""
        with self.mu:
            if not self.booted or self.released:
                return
            self.released = True
        self.close()
        try:
            os.unlink(self.log_path)
        except OSError:
            pass

    def close(self):
        pass

    def wait_ready(self, stream, deadline):
        """Waits for the boot; False (error line sent) when it failed or timed out."""
        while not self.ready.wait(0.25):
            if stream.left():
                return False
            if time.monotonic() > deadline:
                stream.send(error_line("TimeoutError", "the %s kernel did not start in time" % self.language))
                return False
        if self.boot_error:
            stream.send(error_line("KernelError", "the %s kernel did not start: %s" % (self.language, self.boot_error)))
            return False
        return True

    def finish(self, stream, outcome, timeout_s, stopped):
        """The error line of an execution that did not end by itself."""
        if outcome == "died":
            stream.send(self.death())
        elif outcome == "timeout":
            more = "" if stopped else "; the kernel did not stop and was started again (its state is lost)"
            stream.send(error_line("TimeoutError", "execution timed out after %g s and was interrupted%s" % (timeout_s, more)))


class PyKernel(Kernel):
    """An ipykernel process, spoken to over ZeroMQ (shell, iopub, control)."""

    language = "python"

    def boot(self, deadline):
        import zmq
        from jupyter_client.session import Session

        self.zmq = zmq
        ports = free_ports(5)
        key = secrets.token_hex(32)
        conn = {
            "shell_port": ports[0],
            "iopub_port": ports[1],
            "stdin_port": ports[2],
            "control_port": ports[3],
            "hb_port": ports[4],
            "ip": "127.0.0.1",
            "key": key,
            "transport": "tcp",
            "signature_scheme": "hmac-sha256",
            "kernel_name": "python3",
        }
        self.conn_path = os.path.join(RUN_DIR, "kernel-%s.json" % self.tag)
        fd = os.open(self.conn_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(conn, f)
        env = dict(os.environ)
        env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
        # ipykernel then watches its parent (it ends when the server is
        # gone) and prints no banner.
        env["JPY_PARENT_PID"] = str(os.getpid())
        self.spawn(
            [sys.executable, "-m", "ipykernel_launcher", "-f", self.conn_path, "--HistoryManager.enabled=False"],
            stdin=subprocess.DEVNULL,
            env=env,
        )
        self.session = Session(key=key.encode(), signature_scheme="hmac-sha256", username="cove")
        self.zctx = zmq.Context()
        self.shell = self.zctx.socket(zmq.DEALER)
        self.iopub = self.zctx.socket(zmq.SUB)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        for s in (self.shell, self.iopub):
            s.setsockopt(zmq.LINGER, 0)
        self.shell.connect("tcp://127.0.0.1:%d" % ports[0])
        self.iopub.connect("tcp://127.0.0.1:%d" % ports[1])
        self.poller = zmq.Poller()
        self.poller.register(self.shell, zmq.POLLIN)
        self.poller.register(self.iopub, zmq.POLLIN)
        # Ready: a kernel_info reply on shell and, so that iopub is known
        # to be connected (a SUB socket misses what came before), one of
        # our requests' messages on iopub.
        sent, replied, heard = set(), False, False
        while not (replied and heard):
            if self.died():
                raise RuntimeError("it exited with status %s: %s" % (self.proc.poll(), tail(self.log_path)))
            if time.monotonic() > deadline:
                raise RuntimeError("no answer in %g s" % BOOT_S)
            sent.add(self.session.send(self.shell, "kernel_info_request")["header"]["msg_id"])
            end = time.monotonic() + 1.0
            while time.monotonic() < end and not (replied and heard):
                for sock, _ in self.poller.poll(200):
                    _, msg = self.session.recv(sock, mode=zmq.NOBLOCK)
                    if msg and msg["parent_header"].get("msg_id") in sent:
                        if sock is self.shell:
                            replied = True
                        else:
                            heard = True
        self.host = socket.gethostname()

    def close(self):
        if getattr(self, "zctx", None):
            self.shell.close(0)
            self.iopub.close(0)
            self.zctx.term()
            self.zctx = None
        if getattr(self, "conn_path", None):
            try:
                os.unlink(self.conn_path)
            except OSError:
                pass

    def drain(self):
        """Drops what earlier executions left queued (their late output)."""
        for s in (self.shell, self.iopub):
            while self.session.recv(s, mode=self.zmq.NOBLOCK)[1] is not None:
                pass

    def request(self, code, silent):
        content = {
            "code": code,
            "silent": silent,
            "store_history": not silent,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": not silent,
        }
        return self.session.send(self.shell, "execute_request", content)["header"]["msg_id"]

    def wait(self, msg_id, stream, deadline, emit):
        """Follows execution msg_id until its reply and idle status.

        Returns "done", "gone" (the client left), "timeout" or "died"."""
        replied = idle = False
        while not (replied and idle):
            if emit and stream.left():
                return "gone"
            if time.monotonic() > deadline:
                return "timeout"
            events = self.poller.poll(200)
            if not events and self.died():
                return "died"
            for sock, _ in events:
                _, msg = self.session.recv(sock, mode=self.zmq.NOBLOCK)
                if not msg or msg["parent_header"].get("msg_id") != msg_id:
                    continue
                kind, c = msg["header"]["msg_type"], msg["content"]
                if sock is self.shell:
                    if kind == "execute_reply":
                        replied = True
                        if isinstance(c.get("execution_count"), int) and emit:
                            self.count = c["execution_count"]
                    continue
                if kind == "status" and c.get("execution_state") == "idle":
                    idle = True
                elif kind == "execute_input":
                    self.started = msg_id
                    if emit and isinstance(c.get("execution_count"), int):
                        self.count = c["execution_count"]
                elif not emit:
                    continue
                elif kind == "stream":
                    name = "stderr" if c.get("name") == "stderr" else "stdout"
                    stream.send({"type": name, "text": str(c.get("text", ""))})
                elif kind in ("execute_result", "display_data", "update_display_data"):
                    stream.send(result_line(c.get("data"), kind == "execute_result"))
                elif kind == "error":
                    tb = c.get("traceback")
                    stream.send(
                        error_line(
                            str(c.get("ename", "Error")),
                            str(c.get("evalue", "")),
                            "\n".join(str(x) for x in tb) if isinstance(tb, list) else "",
                        )
                    )
        return "done"

    def silent(self, code, deadline):
        """Runs code with no output; False when it did not end in time."""
        return self.wait(self.request(code, True), None, deadline, False) == "done"

    def run(self, code, env, stream, deadline, timeout_s):
        self.drain()
        # A kernel started before the template's snapshot has the random
        # state of every sandbox restored from it: new seeds once the host
        # name (each sandbox's own) is not the one it started under.
        if socket.gethostname() != self.host:
            self.host = socket.gethostname()
            self.silent(
                "import random as _cove_r, sys as _cove_s\n_cove_r.seed()\n"
                "if 'numpy' in _cove_s.modules: _cove_s.modules['numpy'].random.seed()\n"
                "del _cove_r, _cove_s",
                deadline,
            )
        if env and not self.silent(
            "globals()['_cove_env'] = (lambda o, e: ({k: o.environ.get(k) for k in e}, o.environ.update(e))[0])"
            "(__import__('os'), %s)" % json.dumps(env),
            deadline,
        ):
            outcome = "died" if self.died() else "timeout"
        else:
            msg_id = self.request(code, False)
            outcome = self.wait(msg_id, stream, deadline, True)
        stopped = True
        if outcome in ("gone", "timeout"):
            stopped = self.stop(msg_id)
            if not stopped:
                self.kill(None)  # started again by the next execution
        if env and stopped and not self.died():
            self.silent(
                "(lambda o, s: [o.environ.pop(k, None) if v is None else o.environ.__setitem__(k, v)"
                " for k, v in s.items()])(__import__('os'), globals().pop('_cove_env', {}))",
                time.monotonic() + INTERRUPT_S,
            )
        self.finish(stream, outcome, timeout_s, stopped)

    def stop(self, msg_id):
        """Interrupts execution msg_id; True when it ended (idle) in time.

        ipykernel ignores SIGINT outside an execution, so the signal goes
        once the execution has begun (its execute_input), and again every
        2 s while it runs on."""
        end = time.monotonic() + INTERRUPT_S
        sent = 0.0
        while time.monotonic() < end and not self.died():
            if self.started == msg_id and time.monotonic() - sent >= 2:
                self.interrupt()
                sent = time.monotonic()
            for sock, _ in self.poller.poll(200):
                _, msg = self.session.recv(sock, mode=self.zmq.NOBLOCK)
                if not msg or msg["parent_header"].get("msg_id") != msg_id or sock is not self.iopub:
                    continue
                kind = msg["header"]["msg_type"]
                if kind == "execute_input":
                    self.started = msg_id
                elif kind == "status" and msg["content"].get("execution_state") == "idle":
                    return True
        return False


class JsKernel(Kernel):
    """A node process running jskernel.js: requests on its stdin, JSON lines
    on its fd 3."""

    language = "javascript"

    def boot(self, deadline):
        rfd, wfd = os.pipe()
        try:
            self.spawn(
                ["node", os.path.join(HERE, "jskernel.js"), str(wfd)],
                stdin=subprocess.PIPE,
                pass_fds=(wfd,),
            )
        finally:
            os.close(wfd)
        self.msgs = queue.Queue()
        self.reader = os.fdopen(rfd, "rb")
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError("no ready line in %g s" % BOOT_S)
            try:
                msg = self.msgs.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if msg is None:
                raise RuntimeError("node exited: %s" % tail(self.log_path))
            if msg.get("type") == "ready":
                return

    def _read(self):
        try:
            while True:
                line = self.reader.readline(MAX_LINE + 1)
                if not line:
                    break
                if len(line) > MAX_LINE:
                    log("javascript kernel %s: a message over %d bytes; kernel killed" % (self.tag, MAX_LINE))
                    self.kill(None)
                    break
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if isinstance(msg, dict):
                    self.msgs.put(msg)
        except (OSError, ValueError):
            pass
        self.msgs.put(None)

    def close(self):
        if self.proc and self.proc.stdin:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def run(self, code, env, stream, deadline, timeout_s):
        self.next_id += 1
        rid = self.next_id
        try:
            self.proc.stdin.write((json.dumps({"id": rid, "code": code, "env": env or {}}) + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):
            self.finish(stream, "died", timeout_s, True)
            return
        outcome = self.wait(rid, stream, deadline, True)
        stopped = True
        if outcome in ("gone", "timeout"):
            # A SIGINT that comes before the cell runs is lost: again
            # every 0.5 s until it ends.
            end = time.monotonic() + INTERRUPT_S
            outcome2 = "timeout"
            while outcome2 == "timeout" and time.monotonic() < end:
                self.interrupt()
                outcome2 = self.wait(rid, stream, min(end, time.monotonic() + 0.5), False)
            stopped = outcome2 == "done"
            if not stopped:
                self.kill(None)  # started again by the next execution
        self.finish(stream, outcome, timeout_s, stopped)

    def wait(self, rid, stream, deadline, emit):
        while True:
            if emit and stream.left():
                return "gone"
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            try:
                msg = self.msgs.get(timeout=min(left, 0.25))
            except queue.Empty:
                continue
            if msg is None:
                self.msgs.put(None)  # it stays dead for later waits
                return "died"
            if msg.get("id") != rid:
                continue
            kind = msg.get("type")
            if kind == "done":
                if isinstance(msg.get("execution_count"), int):
                    self.count = msg["execution_count"]
                return "done"
            if not emit:
                continue
            if kind in ("stdout", "stderr"):
                stream.send({"type": kind, "text": str(msg.get("text", ""))})
            elif kind == "result":
                stream.send(result_line({"text/plain": msg.get("text", "")}, True))
            elif kind == "error":
                stream.send(
                    error_line(str(msg.get("name", "Error")), str(msg.get("value", "")), str(msg.get("traceback", "")))
                )


def result_line(data, main):
    out = {"type": "result", "is_main_result": main}
    if isinstance(data, dict):
        for mime, v in data.items():
            field = MIME_FIELDS.get(mime, mime)
            if field in ("png", "jpeg") and isinstance(v, str):
                v = "".join(v.split())
            out[field] = v
    return out


def free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


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
