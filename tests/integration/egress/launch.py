#!/usr/bin/env python3
"""launch.py: start cove-egress as libcove would (tests only).

Runs inside the sandbox's user, network and mount namespaces.  Makes the
ctl socket, the log file, a publish listener on 127.0.0.1:PORT and the
ready pipe, writes the config into a pipe, starts cove-egress with those
fds and prints its ready line and pid.  Usage:
  launch.py EGRESS CONFIG.json CTL_SOCK LOG PUBLISH_PORT GUEST_PORT PIDFILE
"""
import json
import os
import select
import socket
import subprocess
import sys

egress, cfg_path, ctl_path, log_path, pub_port, guest_port, pidfile = sys.argv[1:8]
cfg = json.load(open(cfg_path))
ctl = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ctl.bind(ctl_path)
ctl.listen(8)
log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
pub = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
pub.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
pub.bind(("127.0.0.1", int(pub_port)))
pub.listen(8)
rr, rw = os.pipe()
cr, cw = os.pipe()
cfg.update(ctl_fd=ctl.fileno(), log_fd=log, ready_fd=rw,
           publish=[{"fd": pub.fileno(), "guest_port": int(guest_port)}])
os.write(cw, json.dumps(cfg).encode())
os.close(cw)
fds = [ctl.fileno(), log, rw, cr, pub.fileno()]
for fd in fds:
    os.set_inheritable(fd, True)
p = subprocess.Popen([egress, "--config-fd", str(cr)], pass_fds=fds,
                     stdout=sys.stderr, stderr=sys.stderr)
os.close(rw)
os.close(cr)
ready, _, _ = select.select([rr], [], [], 30)
line = os.read(rr, 600).decode().strip() if ready else "timeout"
open(pidfile, "w").write(str(p.pid))
print(line)
sys.exit(0 if line == "ok" else 1)
