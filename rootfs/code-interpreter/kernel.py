"""The code interpreter's kernels: what both kinds share (server.py, rootfs/code-interpreter).

A kernel is one process per context: Python's is ipykernel
(kernel_python.py), JavaScript's a node process running jskernel.js
(kernel_js.py).  It starts in the background; an execution streams its
output as E2B's JSON lines through a stream object (server.py's Stream:
send(obj), left() -> whether the client went away).
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
BOOT_S = float(os.environ.get("COVE_CI_BOOT_S", "300"))
INTERRUPT_S = float(os.environ.get("COVE_CI_INTERRUPT_S", "10"))
RUN_DIR = os.environ.get("COVE_CI_RUN_DIR", "/tmp/cove-ci")
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
