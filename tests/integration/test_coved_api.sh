#!/usr/bin/env bash
# coved's control plane through curl: every route and every error status.
# Keys (401, X-API-KEY and Bearer), bodies (400 bad JSON, unknown field,
# depth, 413 size), create (v2 and v1) with metadata/envVars/timeout, 404
# for an unknown template and sandbox, listing with X-Next-Token and a
# metadata filter, set-timeout, pause (409 twice), connect (same token),
# snapshot and a create from it, fork {count}, network (400 without a
# NIC), stop, logs (the journal), delete (404 twice), 405, expiry (kill
# and pause), a killed cove-vmm reported as dead, 429 with Retry-After
# over max_creates, and /metrics through promtool.  Tenants: the keys file
# gives $KEY to tenant alice and $KEYB to bob (quota: no sandbox); bob
# cannot see, use or change alice's sandbox through any route (404, the
# same body as a missing one) nor through envd (with a made-up token or
# another sandbox's), bob's create is 429 with Retry-After while alice
# creates, and ownership outlives a coved restart.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
coved_env
KEYB=coved-test-keyb-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf '# tenants\nalice:%s\nbob:%s\n' "$KEY" "$KEYB" >"$WORK/keys"
TENANTS='"tenants": {"bob": {"max_sandboxes": 0}}'
coved_start "$TENANTS" || { not_ok "coved starts"; finish; }
ok "coved serves $SOCK"
until_true 5 'grep -q "coved: serving .*, 2 tenants" "$WORK/coved.log"' && ok "coved counts 2 tenants" || not_ok "tenant count: $(tail -n 3 "$WORK/coved.log")"

# apib METHOD PATH [BODY]: api with bob's key.
apib() {
	local m=$1 p=$2
	shift 2
	local data=()
	[ $# -gt 0 ] && data=(-H 'Content-Type: application/json' --data-binary "$1")
	curl -s --max-time 60 --unix-socket "$SOCK" -X "$m" -H "X-API-KEY: $KEYB" \
		-D "$WORK/headers" -o "$WORK/body" -w '%{http_code}' "${data[@]}" "http://coved$p" >"$WORK/code"
	cat "$WORK/body"
}
# envd REQUEST_PATH SANDBOX TOKEN [BODY]: one envd call; prints the status, the body to $WORK/ebody.
envd() {
	local data=()
	[ $# -gt 3 ] && data=(-X POST --data-binary "$4")
	curl -s --max-time 60 --unix-socket "$SOCK" -H "E2b-Sandbox-Id: $2" -H "X-Access-Token: $3" \
		-H 'Content-Type: application/json' "${data[@]}" -o "$WORK/ebody" -w '%{http_code}' "http://coved$1"
}

expect() { # expect CODE WHAT
	if [ "$(code)" = "$1" ]; then ok "$2 -> $1"; else not_ok "$2: got $(code), want $1: $(cat "$WORK/body")"; fi
}

# ---- keys ----
c=$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' http://coved/v2/sandboxes)
[ "$c" = 401 ] && ok "no key -> 401" || not_ok "no key: $c"
c=$(curl -s --unix-socket "$SOCK" -o "$WORK/b" -w '%{http_code}' -H "X-API-KEY: ${KEY}x" http://coved/v2/sandboxes)
[ "$c" = 401 ] && grep -q '"code":401' "$WORK/b" && ok "bad key -> 401 {code,message}" || not_ok "bad key: $c $(cat "$WORK/b")"
c=$(curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" http://coved/v2/sandboxes)
[ "$c" = 200 ] && ok "Bearer key -> 200" || not_ok "Bearer: $c"
[ "$(stat -c %a "$SOCK")" = 660 ] && ok "socket mode 0660" || not_ok "socket mode $(stat -c %a "$SOCK")"

# ---- a stalled client blocks no one ----
python3 - "$SOCK" "$KEY" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.send(b"POST /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + sys.argv[2].encode() +
       b"\r\nContent-Length: 100\r\n\r\n{")
time.sleep(20)
PY
stall=$!
sleep 1
api GET /v2/sandboxes >/dev/null; expect 200 "a request beside a stalled one"
kill $stall 2>/dev/null; wait $stall 2>/dev/null

# ---- bad bodies ----
api POST /v2/sandboxes '{"templateID":' >/dev/null; expect 400 "truncated JSON"
api POST /v2/sandboxes '[1]' >/dev/null; expect 400 "a body that is not an object"
api POST /v2/sandboxes '{"templateID":"base","color":"red"}' >/dev/null; expect 400 "unknown field"
api POST /v2/sandboxes "$(python3 -c 'print("{\"a\":" * 40 + "1" + "}" * 40)')" >/dev/null; expect 400 "JSON 40 deep"
{ printf '{"metadata":{"k":"'; head -c 2000000 /dev/zero | tr '\0' a; printf '"}}'; } >"$WORK/big.json"
api POST /v2/sandboxes @"$WORK/big.json" >/dev/null; expect 413 "a 2 MB body"
api POST /v2/sandboxes '{"templateID":"no-such-image"}' >/dev/null; expect 404 "unknown template"
api POST /v2/sandboxes '{"templateID":"../etc"}' >/dev/null; expect 400 "templateID with a path"
api POST /v2/sandboxes '{"timeout":0}' >/dev/null; expect 400 "timeout 0"
api POST /v2/sandboxes '{"envVars":{"1BAD":"x"}}' >/dev/null; expect 400 "bad env name"
api POST /v2/sandboxes '{"allow_internet_access":true}' >/dev/null; expect 400 "internet asked of a coved without networking"
api GET /sandboxes/nosuchsandbox >/dev/null; expect 404 "unknown sandbox"
api GET /nowhere >/dev/null; expect 404 "unknown route"
api PATCH /v2/sandboxes >/dev/null; expect 405 "wrong method"

# ---- create ----
out=$(api POST /v2/sandboxes '{"templateID":"base","metadata":{"team":"a","n":"1"},"envVars":{"FOO":"bar"},"timeout":600}')
expect 201 "create (v2)"
id=$(jget "$out" 'o["sandboxID"]')
tok=$(jget "$out" 'o["envdAccessToken"]')
[ "$(jget "$out" 'o["envdVersion"]')" = 0.5.7 ] && [ ${#tok} = 64 ] && [ "$(jget "$out" 'o["templateID"]')" = base ] &&
	ok "create answers sandboxID $id, envdVersion 0.5.7, a token" || not_ok "create reply: $out"
[ "$(gx "$id" 'echo alive')" = alive ] && ok "the sandbox runs (cove exec $id)" || not_ok "exec in $id"
out=$(api POST /sandboxes '{"templateID":"minimal","metadata":{"team":"b"}}')
expect 201 "create (v1 path)"
id2=$(jget "$out" 'o["sandboxID"]')
out=$(api GET "/sandboxes/$id")
expect 200 "get"
[ "$(jget "$out" 'o["state"]')" = running ] && [ "$(jget "$out" 'o["metadata"]["team"]')" = a ] &&
	[ "$(jget "$out" 'o["memoryMB"]')" = 128 ] && ok "get: running, metadata, memoryMB" || not_ok "get: $out"

# ---- list ----
out=$(api GET '/v2/sandboxes?limit=1')
expect 200 "list limit=1"
next=$(sed -n 's/^[Xx]-[Nn]ext-[Tt]oken: *\([^\r]*\)\r*$/\1/p' "$WORK/headers")
[ "$(jget "$out" 'len(o)')" = 1 ] && [ -n "$next" ] && ok "first page: 1 sandbox and X-Next-Token" || not_ok "page 1: $out / $next"
out=$(api GET "/v2/sandboxes?limit=1&nextToken=$next")
n2=$(sed -n 's/^[Xx]-[Nn]ext-[Tt]oken: *\([^\r]*\)\r*$/\1/p' "$WORK/headers")
[ "$(jget "$out" 'len(o)')" = 1 ] && [ -z "$n2" ] && [ "$(jget "$out" 'o[0]["sandboxID"]')" = "$id2" ] &&
	ok "second page: the other sandbox, no token" || not_ok "page 2: $out / $n2"
out=$(api GET '/v2/sandboxes?metadata=team%3Db')
[ "$(jget "$out" '[s["sandboxID"] for s in o]')" = "['$id2']" ] && ok "metadata filter" || not_ok "metadata filter: $out"
api GET '/v2/sandboxes?limit=0' >/dev/null; expect 400 "limit=0"
api GET '/v2/sandboxes?nextToken=bogus' >/dev/null; expect 400 "bad nextToken"

# ---- timeout ----
api POST "/sandboxes/$id/timeout" '{"timeout":900}' >/dev/null; expect 204 "set timeout"
api POST "/sandboxes/$id/timeout" '{}' >/dev/null; expect 400 "set timeout without one"
api POST /sandboxes/nosuchsandbox/timeout '{"timeout":5}' >/dev/null; expect 404 "timeout of an unknown sandbox"

# ---- pause, connect ----
gx "$id" 'echo before-pause > /root/p' >/dev/null
api POST "/sandboxes/$id/pause" '{}' >/dev/null; expect 204 "pause"
api POST "/sandboxes/$id/pause" '{}' >/dev/null; expect 409 "pause when paused"
[ "$(jget "$(api GET "/sandboxes/$id")" 'o["state"]')" = paused ] && ok "state paused" || not_ok "state after pause"
$cove ls 2>/dev/null | grep -q "$id" && not_ok "a paused sandbox still has a cove-vmm" || ok "paused: no cove-vmm left"
out=$(api POST "/v2/sandboxes/$id/connect" '{"timeout":600}')
expect 201 "connect resumes"
[ "$(jget "$out" 'o["envdAccessToken"]')" = "$tok" ] && ok "same access token after resume" || not_ok "token changed"
[ "$(gx "$id" 'cat /root/p')" = before-pause ] && ok "the file written before the pause is there" || not_ok "file after resume"
api POST "/v2/sandboxes/$id/connect" '{}' >/dev/null; expect 200 "connect to a running sandbox"
api POST "/sandboxes/$id2/resume" '{}' >/dev/null; expect 409 "v1 resume of a running sandbox"

# ---- snapshot, create from it, fork ----
out=$(api POST "/sandboxes/$id/snapshots" '{}')
expect 201 "snapshot"
snap=$(jget "$out" 'o["snapshotID"]')
out=$(api POST /v2/sandboxes "{\"templateID\":\"$snap\"}")
expect 201 "create from snapshot $snap"
id3=$(jget "$out" 'o["sandboxID"]')
[ "$(gx "$id3" 'cat /root/p')" = before-pause ] && ok "the snapshot's sandbox has the file" || not_ok "file in $id3"
out=$(api POST "/sandboxes/$id/fork" '{"count":2}')
expect 201 "fork count 2"
f1=$(jget "$out" 'o[0]["sandbox"]["sandboxID"]')
f2=$(jget "$out" 'o[1]["sandbox"]["sandboxID"]')
[ -n "$f1" ] && [ "$f1" != "$f2" ] && [ "$(gx "$f2" 'cat /root/p')" = before-pause ] && ok "two forks, each with the file" || not_ok "forks: $out"
api POST "/sandboxes/$id/fork" '{"count":1000}' >/dev/null; expect 400 "fork count 1000"

# ---- tenants: bob and alice's sandbox $id ----
missing=zzzzzzzzzzzzzzzzzzzz # as long as an id, never one
# bob_404 METHOD PATH [BODY]: bob's request on $id answers exactly as on a missing id.
bob_404() {
	local m=$1 p=$2
	shift 2
	apib "$m" "$p" "$@" >"$WORK/b_real"
	local c1; c1=$(code)
	apib "$m" "${p//$id/$missing}" "$@" >"$WORK/b_missing"
	if [ "$c1" = 404 ] && [ "$(sed "s/$id/ID/g" "$WORK/b_real")" = "$(sed "s/$missing/ID/g" "$WORK/b_missing")" ]; then
		ok "bob: $m ${p//$id/A} -> 404, as for a missing sandbox"
	else not_ok "bob: $m ${p//$id/A}: $c1 $(cat "$WORK/b_real") / missing: $(cat "$WORK/b_missing")"; fi
}
out=$(apib GET /v2/sandboxes); [ "$(code)" = 200 ] && [ "$(jget "$out" 'len(o)')" = 0 ] && ok "bob lists no sandbox (v2)" || not_ok "bob's v2 list: $out"
out=$(apib GET /sandboxes); [ "$(code)" = 200 ] && [ "$(jget "$out" 'len(o)')" = 0 ] && ok "bob lists no sandbox (v1)" || not_ok "bob's v1 list: $out"
apib GET "/v2/sandboxes?limit=1&nextToken=$id" >/dev/null; expect 400 "bob: nextToken of alice's sandbox names none"
bob_404 GET "/sandboxes/$id"
bob_404 POST "/v2/sandboxes/$id/connect" '{}'
bob_404 POST "/sandboxes/$id/resume" '{}'
bob_404 POST "/sandboxes/$id/pause" '{}'
bob_404 POST "/sandboxes/$id/fork" '{"count":1}'
bob_404 PUT "/sandboxes/$id/network" '{"allow_internet_access":false}'
bob_404 POST "/sandboxes/$id/snapshots" '{}'
bob_404 POST "/sandboxes/$id/timeout" '{"timeout":5}'
bob_404 GET "/sandboxes/$id/logs"
bob_404 POST "/sandboxes/$id/stop"
bob_404 DELETE "/sandboxes/$id"
apib POST /v2/sandboxes "{\"templateID\":\"$snap\"}" >"$WORK/b_real"; c1=$(code)
apib POST /v2/sandboxes '{"templateID":"snap-zzzzzzzzzzzzzzzz"}' >"$WORK/b_missing"
[ "$c1" = 404 ] && [ "$(sed "s/$snap/S/" "$WORK/b_real")" = "$(sed 's/snap-zzzzzzzzzzzzzzzz/S/' "$WORK/b_missing")" ] &&
	ok "bob: create from alice's snapshot -> 404, as for a missing one" || not_ok "bob from $snap: $c1 $(cat "$WORK/b_real")"
tok2=$(jget "$(api GET "/sandboxes/$id2")" 'o["envdAccessToken"]')
c=$(envd /filesystem.Filesystem/ListDir "$id" "$(printf '%064d' 7)" '{"path":"/root"}')
[ "$c" = 401 ] && ok "envd: alice's id with a made-up token -> 401" || not_ok "envd made-up token: $c $(cat "$WORK/ebody")"
c=$(envd /filesystem.Filesystem/ListDir "$id" "$tok2" '{"path":"/root"}')
[ "$c" = 401 ] && ok "envd: alice's id with another sandbox's token -> 401" || not_ok "envd other token: $c $(cat "$WORK/ebody")"
c=$(envd "/files?path=/root/p" "$id" "$tok2")
[ "$c" = 401 ] && ok "envd: /files of alice's id with another sandbox's token -> 401" || not_ok "envd files: $c $(cat "$WORK/ebody")"
c=$(envd "/process.Process/List" "$id" "$KEYB" '{}')
[ "$c" = 401 ] && ok "envd: bob's API key as a token -> 401" || not_ok "envd api key as token: $c"
c=$(envd /filesystem.Filesystem/ListDir "$id" "$tok" '{"path":"/root"}')
[ "$c" = 200 ] && grep -q '"name":"p"' "$WORK/ebody" && ok "envd: alice's own token lists /root" || not_ok "envd own token: $c $(cat "$WORK/ebody")"
out=$(api GET "/sandboxes/$id")
[ "$(jget "$out" 'o["state"]')" = running ] && [ "$(gx "$id" 'cat /root/p')" = before-pause ] &&
	ok "alice's sandbox still runs, untouched" || not_ok "alice's sandbox after bob: $out"
grep -q '"tenant":"alice"' "$STATE/sandboxes/$id.json" && ok "the record names its tenant" || not_ok "record: no tenant"
apib POST /v2/sandboxes '{}' >/dev/null
[ "$(code)" = 429 ] && grep -qi '^retry-after: [0-9]' "$WORK/headers" && grep -q max_sandboxes "$WORK/body" &&
	ok "bob over his quota (max_sandboxes 0) -> 429 with Retry-After" || not_ok "bob's quota: $(code) $(cat "$WORK/body")"

# ---- network, stop, logs, delete ----
api PUT "/sandboxes/$id/network" '{"allowOut":["198.51.100.1"]}' >/dev/null; expect 400 "network of a sandbox without a NIC"
api PUT "/sandboxes/$id/network" '{"allowOut":"x"}' >/dev/null; expect 400 "network with a bad rule list"
api POST "/sandboxes/$id2/stop" >/dev/null; expect 204 "stop"
[ "$(jget "$(api GET "/sandboxes/$id2")" 'o["state"]')" = stopped ] && ok "state stopped" || not_ok "state after stop"
out=$(api GET "/sandboxes/$id/logs")
expect 200 "logs"
ev=$(jget "$out" '" ".join(e.get("event","") for e in o["entries"])')
[[ "$ev" == "created timeout paused resumed snapshotted forked"* ]] && ok "journal: $ev" || not_ok "journal events: $ev"
[ "$(jget "$out" 'o["entries"][0]["sandbox"]')" = "$id" ] && ok "journal lines name the sandbox" || not_ok "journal: $out"
$cove logs "$id" --journal --state-dir "$STATE" >"$WORK/jl" 2>&1 && grep -q '"event":"paused"' "$WORK/jl" &&
	ok "cove logs --journal reads it" || not_ok "cove logs --journal: $(cat "$WORK/jl")"
$cove logs "$id" --journal --verify --state-dir "$STATE" >"$WORK/jv" 2>&1 && grep -q whole "$WORK/jv" &&
	ok "its hash chain is whole" || not_ok "cove logs --journal --verify: $(cat "$WORK/jv")"
api GET "/sandboxes/$id/logs?limit=0" >/dev/null; expect 400 "logs limit=0"
for s in "$id2" "$id3" "$f1" "$f2"; do api DELETE "/sandboxes/$s" >/dev/null; done
expect 204 "delete"
api DELETE "/sandboxes/$f2" >/dev/null; expect 404 "delete twice"

# ---- a dead cove-vmm is reported ----
pid=$(jget "$(cat "$COVE_RUNTIME_DIR/$id/meta.json")" 'o["pid"]')
kill -9 "$pid"
if until_true 30 '[ "$(jget "$(api GET "/sandboxes/$id")" "o[\"state\"]")" = dead ]'; then
	ok "a killed cove-vmm shows as dead: $(jget "$(api GET "/sandboxes/$id")" 'o.get("deadReason")')"
else not_ok "killed sandbox: $(api GET "/sandboxes/$id")"; fi
api GET /v2/sandboxes | grep -q "$id" && ok "the dead sandbox is listed" || not_ok "dead one hidden"
api DELETE "/sandboxes/$id" >/dev/null; expect 204 "delete a dead sandbox"

# ---- expiry ----
k=$(jget "$(api POST /v2/sandboxes '{"timeout":2}')" 'o["sandboxID"]')
expect 201 "alice creates while bob is over his quota"
p=$(jget "$(api POST /v2/sandboxes '{"timeout":2,"autoPause":true}')" 'o["sandboxID"]')
if until_true 60 '[ "$(api GET "/sandboxes/$k" >/dev/null; code)" = 404 ]'; then ok "timeout expiry kills"; else not_ok "expired sandbox $k: $(api GET "/sandboxes/$k")"; fi
if until_true 60 '[ "$(jget "$(api GET "/sandboxes/$p")" "o[\"state\"]")" = paused ]'; then ok "timeout expiry with autoPause pauses"; else not_ok "autoPause: $(api GET "/sandboxes/$p")"; fi

# ---- metrics ----
curl -s --unix-socket "$SOCK" -H "X-API-KEY: $KEY" http://coved/metrics >"$WORK/metrics"
if command -v promtool >/dev/null; then
	if promtool check metrics <"$WORK/metrics" >"$WORK/prom" 2>&1; then ok "promtool accepts /metrics"; else
		not_ok "promtool: $(cat "$WORK/prom")"; fi
else not_ok "promtool is not installed (scripts/install-deps)"; fi
grep -q '^coved_vmm_exits_total 1$' "$WORK/metrics" && ok "coved_vmm_exits_total 1" || not_ok "vmm exits: $(grep vmm_exits "$WORK/metrics")"
grep -q '^coved_create_seconds_count [1-9]' "$WORK/metrics" && grep -q '^coved_restore_seconds_count [1-9]' "$WORK/metrics" &&
	ok "create and restore histograms counted" || not_ok "histograms: $(grep _count "$WORK/metrics")"

# ---- the OpenAPI file ----
if [ -x tests/openapi/node_modules/.bin/swagger-cli ]; then
	if (cd tests/openapi && node_modules/.bin/swagger-cli validate ../../docs/openapi.yaml) >"$WORK/oa" 2>&1; then
		ok "swagger-cli accepts docs/openapi.yaml"; else not_ok "openapi: $(cat "$WORK/oa")"; fi
else
	echo "# tests/openapi is not installed (cd tests/openapi && npm ci): openapi check left out"
fi

# ---- 429 over max_creates ----
coved_stop
echo "coved stopped; again with max_creates 1"
coved_start "\"max_creates\": 1, $TENANTS" || { not_ok "coved restarts"; finish; }
api GET "/sandboxes/$p" >/dev/null; expect 200 "alice's paused sandbox after the restart"
apib GET "/sandboxes/$p" >/dev/null; expect 404 "bob: alice's paused sandbox after the restart"
api DELETE "/sandboxes/$p" >/dev/null
pids=()
for i in 1 2 3; do
	curl -s --max-time 300 --unix-socket "$SOCK" -X POST -H "X-API-KEY: $KEY" -d '{}' -D "$WORK/h$i" -o "$WORK/b$i" \
		-w '%{http_code}' http://coved/v2/sandboxes >"$WORK/c$i" &
	pids+=($!)
done
wait "${pids[@]}"
codes=$(cat "$WORK"/c1 "$WORK"/c2 "$WORK"/c3 | tr '\n' ' ' ; echo)
if grep -q 429 "$WORK"/c[123] && grep -q 201 "$WORK"/c[123]; then ok "three creates at once over max_creates 1: $codes"; else not_ok "429: $codes"; fi
for i in 1 2 3; do
	if [ "$(cat "$WORK/c$i")" = 429 ]; then
		grep -qi '^retry-after: [0-9]' "$WORK/h$i" && ok "429 carries Retry-After" || not_ok "no Retry-After: $(cat "$WORK/h$i")"
		break
	fi
done
grep -q 'coved_limit_hits_total{limit="creates"} [1-9]' <(curl -s --unix-socket "$SOCK" -H "X-API-KEY: $KEY" http://coved/metrics) &&
	ok "limit hits counted" || not_ok "limit hits metric"
for i in 1 2 3; do
	[ "$(cat "$WORK/c$i")" = 201 ] && api DELETE "/sandboxes/$(jget "$(cat "$WORK/b$i")" 'o["sandboxID"]')" >/dev/null
done
finish
