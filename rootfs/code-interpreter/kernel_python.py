"""The Python kernel: ipykernel, spoken to over its ZeroMQ sockets (kernel.py)."""

import json
import os
import secrets
import socket
import subprocess
import sys
import time

from kernel import BOOT_S, INTERRUPT_S, RUN_DIR, Kernel, error_line, free_ports, result_line, tail


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
