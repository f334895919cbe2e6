#!/usr/bin/env bash
# Traces (issue 36): coved exports a sandbox's record as OpenTelemetry
# spans (OTLP/HTTP JSON) to tests/integration/otlp_receiver.py, which
# checks the schema.  One coved, three parts:
#  - tenants: alice's sandbox has its own trace (getInfo's traceId, the
#    journal's trace_id); bob's requests carrying alice's trace id make
#    spans of bob's tenant and sandbox only, none of alice's;
#  - a Node agent (tests/e2b/trace.mjs: @opentelemetry/sdk-trace-node, the
#    unmodified e2b SDK with traceparent as a header) creates, runs two
#    commands (one fails), writes, reads, lists, removes a file, is refused a
#    connection, pauses, resumes and kills: one trace in which coved's
#    spans are children of the agent's span, with names, exit codes,
#    paths, the denied host as an event, no secret anywhere;
#  - the collector down, then slow (answers after 10 s): commands still
#    run, coved_trace_spans_dropped_total rises, spans flow again after;
#    `cove logs --otlp` of the finished sandbox sends the same spans as
#    the live export, and POST /sandboxes/{id}/traces/export answers (the
#    receiver is on loopback: webhook_private_ok lets the route reach it).
source tests/integration/lib.sh
source tests/integration/netlib.sh
source tests/integration/coved_lib.sh
NODE=${NODE:-/usr/bin/node}
# scripts/install-deps installs both: their absence is a failure, not a skip.
if ! [ -x "$NODE" ] || ! [ -d tests/e2b/node_modules/@opentelemetry/sdk-trace-node ]; then
	not_ok "no node or no OpenTelemetry in tests/e2b/node_modules (scripts/install-deps runs npm ci there)"
	finish
fi
net_env
coved_env
KEYB=coved-test-keyb-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf '# tenants\nalice:%s\nbob:%s\n' "$KEY" "$KEYB" >"$WORK/keys"
SECRET=otlp-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
R=$WORK/otlp
mkdir -p "$R"
RPORT=$((20000 + RANDOM % 20000))
PORT=$((RPORT + 1))
receiver_up() {
	python3 tests/integration/otlp_receiver.py "$RPORT" "$R" >>"$WORK/receiver.log" 2>&1 &
	RPID=$!
	until_true 10 "curl -s -o /dev/null http://127.0.0.1:$RPORT/"
}
receiver_down() { kill "$RPID" 2>/dev/null; wait "$RPID" 2>/dev/null; }
receiver_up || { not_ok "the receiver starts"; finish; }
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$RPORT OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer%20$SECRET" \
	OTEL_SERVICE_NAME=coved-test coved_start "\"network\": true, \"tcp\": \"127.0.0.1:$PORT\", \"webhook_private_ok\": true" ||
	{ not_ok "coved starts"; finish; }
trap 'receiver_down; coved_cleanup' EXIT
# spans PYTHON: evaluates an expression over the spans received so far
# (S: the list, A(span, key): an attribute's value).
spans() {
	python3 - "$R/spans.jsonl" "$1" <<'PY'
import json, sys
S = [json.loads(l) for l in open(sys.argv[1])] if __import__("os").path.exists(sys.argv[1]) else []
def A(s, k):
    for a in s.get("attributes", []):
        if a["key"] == k:
            return next(iter(a["value"].values()))
print(eval(sys.argv[2]))
PY
}

# ---- tenants: alice's own trace, bob claiming it ----
out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600}')
[ "$(code)" = 201 ] || { not_ok "alice's create: $out"; finish; }
S1=$(jget "$out" 'o["sandboxID"]')
TOK1=$(jget "$out" 'o["envdAccessToken"]')
T1=$(jget "$(api GET "/sandboxes/$S1")" 'o.get("traceId", "")')
J1=$(head -1 "$STATE/journal/$S1.jsonl")
if [[ "$T1" =~ ^[0-9a-f]{32}$ ]] && [ "$(jget "$J1" 'o["trace_id"]')" = "$T1" ]; then
	ok "a sandbox without a caller's trace has its own: getInfo's traceId is the journal's trace_id"
else
	not_ok "traceId '$T1', journal: $J1"
fi
BOBSPAN=aaaaaaaaaaaaaaaa
bob() { curl -s --max-time 300 --unix-socket "$SOCK" -H "X-API-KEY: $KEYB" -H "traceparent: 00-$T1-$BOBSPAN-01" "$@"; }
S2=$(jget "$(bob -X POST -H 'Content-Type: application/json' --data '{"templateID":"base","timeout":600}' \
	http://coved/v2/sandboxes)" 'o["sandboxID"]')
c=$(bob -o /dev/null -w '%{http_code}' -X POST "http://coved/sandboxes/$S1/pause")
bob -X DELETE "http://coved/sandboxes/$S2" >/dev/null
[ -n "$S2" ] && [ "$c" = 404 ] && ok "bob, with alice's trace id, creates his own sandbox; alice's is 404 to him" ||
	not_ok "bob: sandbox '$S2', pause of alice's: $c"

# ---- a traced agent through the e2b SDK ----
out=$(cd tests/e2b && E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT E2B_API_KEY=$KEY \
	OTLP_URL=http://127.0.0.1:$RPORT DENIED_HOST=198.51.100.91 timeout 600 "$NODE" trace.mjs 2>"$WORK/node.err")
SID=$(jget "$out" 'o["sandboxId"]' 2>/dev/null)
TRACE=$(jget "$out" 'o["traceId"]' 2>/dev/null)
CSPAN=$(jget "$out" 'o["spanId"]' 2>/dev/null)
[ "$(jget "$out" 'o["exitCodes"]' 2>/dev/null)" = "[0, 3, 0]" ] && ok "the agent ran: exit codes 0, 3, 0 in sandbox $SID" ||
	{ not_ok "trace.mjs: $out $(tail -30 "$WORK/node.err" | tr "\n" " ")"; finish; }
until_true 30 "[ \"\$(spans \"sum(1 for s in S if s['name'] == 'sandbox' and A(s, 'cove.sandbox_id') == '$SID')\")\" = 1 ]" ||
	not_ok "no sandbox span of $SID came"
got=$(spans "
[x for x in [
 'client span' if not any(s['spanId'] == '$CSPAN' and s['service'] != 'coved-test' for s in S) else '',
 'names' if not {'sandbox.create', 'process.exec', 'file.write', 'file.read', 'file.list', 'file.remove', 'sandbox.pause', 'sandbox.resume', 'sandbox.kill', 'sandbox'} <= {s['name'] for s in S if s['traceId'] == '$TRACE' and s['service'] == 'coved-test'} else '',
 'parents' if any(s['parentSpanId'] != '$CSPAN' for s in S if s['traceId'] == '$TRACE' and s['service'] == 'coved-test') else '',
 'tenant' if any(A(s, 'cove.tenant') != 'alice' or A(s, 'cove.sandbox_id') != '$SID' for s in S if s['traceId'] == '$TRACE' and s['service'] == 'coved-test') else '',
 'exit codes' if sorted(A(s, 'process.exit_code') for s in S if s['traceId'] == '$TRACE' and s['name'] == 'process.exec') != ['0', '0', '0', '3'] else '',
 'failed command' if not any('exit 3' in A(s, 'process.command_line') and s.get('status', {}).get('code') == 2 for s in S if s['name'] == 'process.exec' and s['traceId'] == '$TRACE') else '',
 'paths' if sorted((s['name'], A(s, 'file.path'), A(s, 'cove.file.bytes')) for s in S if s['traceId'] == '$TRACE' and s['name'] in ('file.read', 'file.write', 'file.remove')) != [('file.read', '/root/traced.txt', '12'), ('file.remove', '/root/traced.txt', '0'), ('file.write', '/root/traced.txt', '12')] else '',
 'list' if not any(A(s, 'file.path') == '/root' and int(A(s, 'cove.file.bytes')) >= 1 for s in S if s['traceId'] == '$TRACE' and s['name'] == 'file.list') else '',
 'denied host' if not any(e['name'] == 'egress.deny' and A(e, 'server.address') == '198.51.100.91' for s in S if s['name'] == 'sandbox' and A(s, 'cove.sandbox_id') == '$SID' for e in s.get('events', [])) else '',
] if x]")
[ "$got" = "[]" ] && ok "one trace: coved's spans (create, execs, file write, read, list, remove, pause, resume, kill, the sandbox) are children of the agent's span, exit codes 0 and 3, the paths, the denied host an event" ||
	not_ok "the agent's trace: $got; $(spans "[(s['name'], s.get('parentSpanId')) for s in S if s['traceId'] == '$TRACE']")"
got=$(spans "[x for x in [
 'parents missing' if {s.get('parentSpanId') for s in S if s['traceId'] == '$TRACE' and s.get('parentSpanId')} - {s['spanId'] for s in S} else '',
 'secret' if '$SECRET' in json.dumps(S) else '',
] if x]")
{ [ "$got" = "[]" ] && [ ! -s "$R/errors" ] && grep -q "Bearer $SECRET" "$R/auth" && ! grep -q "$SECRET" "$WORK/coved.log"; } &&
	ok "the schema holds, every parent came, the header reached the collector and no span nor log shows it" ||
	not_ok "schema: $got; errors: $(head -3 "$R/errors" 2>/dev/null)"
got=$(spans "[x for x in [
 'bob with alice' if any(A(s, 'cove.tenant') == 'bob' and A(s, 'cove.sandbox_id') != '$S2' for s in S) else '',
 'alice under bob' if any(A(s, 'cove.sandbox_id') == '$S1' and (A(s, 'cove.tenant') != 'alice' or s.get('parentSpanId') == '$BOBSPAN') for s in S) else '',
 'bob none' if not any(s.get('parentSpanId') == '$BOBSPAN' and A(s, 'cove.tenant') == 'bob' for s in S) else '',
] if x]")
[ "$got" = "[]" ] && ok "bob's requests under alice's trace id: spans of bob's sandbox only, none of alice's" || not_ok "tenants: $got"

# ---- the collector down, then slow, then back ----
dropped() { metric coved_trace_spans_dropped_total; }
execs() { # N: seconds (ms precision) for N commands through envd, or "failed"
	local t0 n
	t0=$(date +%s%N)
	n=$(python3 tests/integration/envd_start.py "$SOCK" "$S1" "$TOK1" "$1")
	[ "$n" = "$1" ] && echo $((($(date +%s%N) - t0) / 1000000)) || echo failed
}
healthy=$(execs 5)
receiver_down
d0=$(dropped)
down=$(execs 5)
until_true 15 "[ \"\$(dropped)\" -gt \"$d0\" ]" && [ "$down" != failed ] &&
	ok "collector down: 5 commands ran, dropped spans $d0 -> $(dropped)" || not_ok "down: execs $down, dropped $(dropped)"
touch "$R/slow"
receiver_up
d1=$(dropped)
slow=$(execs 5)
until_true 20 "[ \"\$(dropped)\" -gt \"$d1\" ]" && [ "$slow" != failed ] &&
	ok "collector slow (10 s answers): 5 commands ran, dropped spans $d1 -> $(dropped)" || not_ok "slow: execs $slow, dropped $(dropped)"
echo "bench: {\"exec5_ms\": {\"healthy\": $healthy, \"down\": $down, \"slow\": $slow}}"
receiver_down
rm -f "$R/slow"
receiver_up
python3 tests/integration/envd_start.py "$SOCK" "$S1" "$TOK1" 1 'echo back-again' >/dev/null
until_true 15 "[ \"\$(spans \"sum(1 for s in S if A(s, 'process.command_line') and 'back-again' in A(s, 'process.command_line'))\")\" = 1 ]" &&
	ok "the collector back: spans flow again ($(metric coved_trace_spans_exported_total) exported)" || not_ok "no span after recovery"

# ---- the past: cove logs --otlp, and the API route ----
live=$(spans "sorted(json.dumps({k: v for k, v in s.items() if k != 'service'}, sort_keys=True) for s in S if A(s, 'cove.sandbox_id') == '$SID')")
mv "$R/spans.jsonl" "$R/live.jsonl"
$cove logs "$SID" --otlp "http://127.0.0.1:$RPORT" --state-dir "$STATE" >"$WORK/export" 2>&1
again=$(spans "sorted(json.dumps({k: v for k, v in s.items() if k != 'service'}, sort_keys=True) for s in S if A(s, 'cove.sandbox_id') == '$SID')")
[ "$live" = "$again" ] && [ "$(spans 'len(S)')" -ge 9 ] && ok "cove logs --otlp of the finished sandbox: the same $(spans 'len(S)') spans as the live export" ||
	not_ok "cove logs --otlp: $(cat "$WORK/export"); live $(wc -c <<<"$live") bytes, again $(wc -c <<<"$again")"
out=$(api POST "/sandboxes/$S1/traces/export" "{\"endpoint\": \"http://127.0.0.1:$RPORT\"}")
[ "$(code)" = 200 ] && [ "$(jget "$out" 'o["spans"]')" -ge 17 ] && ok "POST /sandboxes/{id}/traces/export: $(jget "$out" 'o["spans"]') spans" ||
	not_ok "export route: $(code) $out"
api DELETE "/sandboxes/$S1" >/dev/null
finish
