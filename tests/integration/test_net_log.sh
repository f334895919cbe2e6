#!/usr/bin/env bash
# The egress log (cove logs NAME --egress) has one JSON line per decision:
# resolver answers and refusals, proxy allows and denials, direct-path
# allows and denials, each with time, protocol, destination, port, name,
# rule, verdict and bytes.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

$cove start --name lg --allow allowed.test --allow 198.51.100.90/32:9000 >/dev/null 2>"$WORK/err" || {
	not_ok "start: $(cat "$WORK/err")"; finish; }
gx lg 'nslookup allowed.test; nslookup denied.other.test; timeout 20 wget -q -O- http://allowed.test/
echo 198.51.100.80 other.test >> /etc/hosts; timeout 20 wget -q -O- http://other.test/
echo x | nc -w 5 198.51.100.90 9000; nc -w 5 198.51.100.91 9000 </dev/null' >/dev/null
sleep 2
$cove logs lg --egress >"$WORK/log" 2>"$WORK/err" || not_ok "cove logs --egress: $(cat "$WORK/err")"
python3 - "$WORK/log" <<'PY' || FAILED=1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
need = {
    "dns allow allowed.test": lambda e: e["proto"] == "dns" and e["name"] == "allowed.test" and e["verdict"] == "allow",
    "dns deny denied.other.test": lambda e: e["proto"] == "dns" and e["name"] == "denied.other.test" and e["verdict"] == "deny",
    "proxy allow allowed.test:80": lambda e: e.get("via") == "proxy" and e["name"] == "allowed.test" and e["verdict"] == "allow" and e["port"] == 80,
    "proxy deny other.test:80": lambda e: e.get("via") == "proxy" and e["name"] == "other.test" and e["verdict"] == "deny",
    "direct allow 198.51.100.90:9000": lambda e: e.get("via") == "direct" and e["dst"] == "198.51.100.90" and e["port"] == 9000 and e["verdict"] == "allow",
    "direct deny 198.51.100.91:9000": lambda e: e.get("via") == "direct" and e["dst"] == "198.51.100.91" and e["verdict"] == "deny",
}
bad = 0
for what, f in need.items():
    hit = [e for e in lines if all(k in e for k in ("time", "proto", "dst", "port", "verdict")) and f(e)]
    print(("ok - egress log: " if hit else "not ok - egress log lacks: ") + what + (": " + json.dumps(hit[0]) if hit else ""))
    bad += not hit
allowed = [e for e in lines if e.get("via") == "proxy" and e["verdict"] == "allow"]
if allowed and all(isinstance(e.get("bytes"), int) and e["bytes"] > 0 for e in allowed):
    print("ok - proxied connections carry their byte counts")
else:
    print("not ok - proxied byte counts: %s" % allowed); bad += 1
sys.exit(1 if bad else 0)
PY
$cove stop lg >/dev/null
finish
