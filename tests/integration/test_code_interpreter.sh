#!/usr/bin/env bash
# The code interpreter (issue 32): coved's built-in template
# code-interpreter-v1, made on first use from build/images/code-interpreter.ext4
# (make rootfs-code-interpreter) with its server (rootfs/code-interpreter)
# started before the snapshot.
# - The first create builds it (timed); a sandbox from it answers on
#   127.0.0.1:49999 at once.
# - Through coved's port relay (E2b-Sandbox-Port: 49999): the unmodified
#   @e2b/code-interpreter SDK (tests/e2b/code-interpreter.mjs: create,
#   state, callbacks, a PNG, an error, contexts, restart, JavaScript,
#   timeoutMs), then 8 sandboxes at once; inside the first sandbox,
#   tests/integration/code_interpreter_client.py checks what the SDK's do
#   not (HTML, env vars, JavaScript contexts, the server's timeout, a
#   client that leaves, a kernel's death, bad requests).
# - Without the relay (or node): the client's every check in the guest,
#   and its quick ones in 8 sandboxes at once.
# The image is used where it is (no copy to tmpfs: 1.5 GiB); the template
# holds what its boot read in the page cache of its snapshot.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
NODE=${NODE:-/usr/bin/node}
IMG=build/images/code-interpreter.ext4
[ -f "$IMG" ] || { echo "skip: $IMG is not built (make rootfs-code-interpreter)"; exit 77; }
coved_env
ln -sf "$PWD/$IMG" "$WORK/images/code-interpreter.ext4"
PORT=$((20000 + RANDOM % 20000))
coved_start "\"tcp\": \"127.0.0.1:$PORT\", \"max_timeout_s\": 3600" || { not_ok "coved starts"; finish; }

# create: one sandbox of code-interpreter-v1 (curl's own limit: the first
# one builds the template); prints its id, or nothing.
create() {
	curl -s --max-time 1500 --unix-socket "$SOCK" -H "X-API-KEY: $KEY" -H 'Content-Type: application/json' \
		-d '{"templateID": "code-interpreter-v1", "timeout": 1800}' http://coved/v2/sandboxes >"$WORK/create.$1"
	jget "$(cat "$WORK/create.$1")" 'o["sandboxID"]' 2>/dev/null
}
# guest ID MODE: the in-guest client's checks in sandbox ID, its lines
# prefixed with the sandbox's number; status 1 when one failed.
guest() {
	$cove cp tests/integration/code_interpreter_client.py "$1:/tmp/cic.py" >/dev/null 2>&1 &&
		timeout -k 5 900 $cove exec "$1" -- python3 /tmp/cic.py "$2" 2>&1
}

t0=$(date +%s%N)
id=$(create 0)
if [ -n "$id" ]; then
	ok "the first create of code-interpreter-v1 built its template and started in $((($(date +%s%N) - t0) / 1000000)) ms"
else
	not_ok "create code-interpreter-v1: $(cat "$WORK/create.0")"
	grep -a 'template\|code-interpreter' "$WORK/coved.log" | tail -5
	finish
fi
grep -Eq '"name": *"code-interpreter-v1"' <<<"$(api GET /templates)" && ok "GET /templates lists code-interpreter-v1" ||
	not_ok "GET /templates: $(cat "$WORK/body")"

# Does coved relay E2b-Sandbox-Port to the guest?  The server's /health
# answers "OK"; envd's own /health has no body.
tok=$(jget "$(cat "$WORK/create.0")" 'o["envdAccessToken"]')
fwd=$(curl -s --max-time 60 -H "E2b-Sandbox-Id: $id" -H "E2b-Sandbox-Port: 49999" -H "X-Access-Token: $tok" \
	"http://127.0.0.1:$PORT/health")
sdk=1
[ "$fwd" = OK ] && ok "coved relays E2b-Sandbox-Port 49999 to the server (/health: OK)" ||
	{ sdk=; not_ok "coved's relay to port 49999: got '${fwd:0:80}'"; }
[ -x "$NODE" ] && [ -d tests/e2b/node_modules/@e2b/code-interpreter ] ||
	{ sdk=; not_ok "no node or no @e2b/code-interpreter (scripts/install-deps runs npm ci in tests/e2b)"; }

# In the guest: the checks only this client makes (the SDK checks the rest
# below).
mode=extra
t0=$(date +%s%N)
guest "$id" $mode >"$WORK/guest.out"
rc=$?
sed 's/^/    /' "$WORK/guest.out"
n=$(grep -c '^ok - ' "$WORK/guest.out")
if [ "$rc" = 0 ] && [ "$n" -ge 10 ]; then
	ok "the server's routes in the sandbox ($mode): $n checks in $((($(date +%s%N) - t0) / 1000000)) ms"
else
	not_ok "in-guest checks ($mode, status $rc, $n ok): $(grep -m3 '^not ok' "$WORK/guest.out")"
fi
api DELETE "/sandboxes/$id" >/dev/null

if [ -n "$sdk" ]; then
	export E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT E2B_API_KEY=$KEY
	for mode in all "concurrent 8"; do
		t0=$(date +%s%N)
		# shellcheck disable=SC2086 # the mode's words
		(cd tests/e2b && timeout 900 "$NODE" code-interpreter.mjs $mode) >"$WORK/sdk.out" 2>&1
		rc=$?
		sed 's/^/    /' "$WORK/sdk.out" | tail -n 40
		if [ "$rc" = 0 ]; then
			ok "@e2b/code-interpreter $mode: $(grep -c '^ok - ' "$WORK/sdk.out") checks in $((($(date +%s%N) - t0) / 1000000)) ms"
		else
			not_ok "@e2b/code-interpreter $mode (status $rc): $(grep -m3 '^not ok\|Error' "$WORK/sdk.out")"
		fi
	done
fi
finish
