#!/usr/bin/env bash
# Egress decisions in coved's journal (issue 30): a sandbox with a network
# policy asks for a name it may not resolve and connects where it may not;
# cove-egress logs both refusals, and coved folds them into the sandbox's
# journal (type egress) before the line of the command that caused them,
# each once, with the chain still whole.
source tests/integration/lib.sh
source tests/integration/netlib.sh
source tests/integration/coved_lib.sh
net_env
coved_env
coved_start '"network": true' || { not_ok "coved starts"; finish; }
out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600,"network":{"allowOut":["198.51.100.90/32:9000"]}}')
[ "$(code)" = 201 ] || { not_ok "create with a network: $out"; finish; }
id=$(jget "$out" 'o["sandboxID"]')
tok=$(jget "$out" 'o["envdAccessToken"]')
python3 tests/integration/envd_start.py "$SOCK" "$id" "$tok" 1 \
	'nslookup denied.other.test; nc -w 3 198.51.100.91 9000 </dev/null; sleep 2; true' >/dev/null
python3 tests/integration/envd_start.py "$SOCK" "$id" "$tok" 1 'true' >/dev/null
out=$(api GET "/sandboxes/$id/logs")
got=$(python3 - "$out" <<'PY'
import json, sys
es = json.loads(sys.argv[1])["entries"]
kinds = [e["type"] for e in es]
eg = [e["egress"] for e in es if e["type"] == "egress" and isinstance(e["egress"], dict)]
dns = any(d.get("proto") == "dns" and d.get("name") == "denied.other.test" and d.get("verdict") == "deny" for d in eg)
nc = any(d.get("dst") == "198.51.100.91" and d.get("verdict") == "deny" for d in eg)
before = "egress" in kinds and "exec" in kinds and kinds.index("egress") < kinds.index("exec")
once = len(eg) == len({json.dumps(d, sort_keys=True) for d in eg})
print(dns, nc, before, once)
PY
)
[ "$got" = "True True True True" ] && ok "the journal has both refusals, before the command's line, each once" ||
	{ not_ok "egress in the journal: $got"; echo "$out" | head -c 2000; }
v=$(api GET "/sandboxes/$id/logs?verify=1")
[ "$(jget "$v" 'o["whole"]')" = True ] && ok "the chain is whole: $(jget "$v" 'o["lines"]') lines" || not_ok "verify: $v"
$cove logs "$id" --egress >"$WORK/elog" 2>&1
n=$(grep -c . "$WORK/elog")
j=$(jget "$out" 'sum(1 for e in o["entries"] if e["type"] == "egress")')
# egress.log may have grown since the journal was read, never shrunk.
[ "$j" -ge 2 ] && [ "$j" -le "$n" ] && ok "$j egress lines in the journal, $n in egress.log now" ||
	not_ok "journal $j, egress.log $n: $(cat "$WORK/elog")"
api DELETE "/sandboxes/$id" >/dev/null
finish
