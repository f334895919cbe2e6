"""The JavaScript kernel: a node process running jskernel.js (kernel.py)."""

import json
import os
import queue
import subprocess
import threading
import time

from kernel import BOOT_S, HERE, INTERRUPT_S, Kernel, error_line, log, result_line, tail

MAX_LINE = 64 << 20  # one message of the JavaScript kernel


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
