# Helpers for the coved tests (sourced after lib.sh; runs inside scripts/kvm-host).
#
# coved_env: cove_env plus coved's own files in $WORK: an API key file
# (0600), a state dir, a socket; images found through $COVE_IMAGES (the
# staged minimal image).  coved_start [EXTRA_JSON_KEYS] starts coved in the
# foreground on them; coved_stop stops it (sandboxes keep running).
# api METHOD PATH [BODY]: one request over the Unix socket; the body goes
# to stdout, the status to $WORK/code (read it with `code`), headers to
# $WORK/headers.

coved_env() {
	need "$BIN/coved"
	cove_env
	mkdir -p "$WORK/images"
	ln -sf "$COVE_IMAGE" "$WORK/images/minimal.ext4"
	export COVE_IMAGES=$WORK/images
	KEY=coved-test-key-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
	printf '%s\n' "$KEY" >"$WORK/keys"
	chmod 600 "$WORK/keys"
	SOCK=$WORK/coved.sock
	STATE=$WORK/state
	trap coved_cleanup EXIT
}

coved_cleanup() {
	[ "$FAILED" = 0 ] || { echo "--- coved.log (last lines)"; tail -n 20 "$WORK/coved.log"; }
	coved_stop
	cove_cleanup
}

coved_start() {
	# EXTRA: more "key": value pairs, which override the defaults here.
	python3 - "$WORK/coved.json" "{${1:-}}" <<PY || return 1
import json, sys
c = {"socket": "$SOCK", "state_dir": "$STATE", "api_keys_file": "$WORK/keys",
     "network": False, "memory_mib": 128, "templates_dir": "$COVE_TEMPLATE_DIR"}
c.update(json.loads(sys.argv[2]))
json.dump(c, open(sys.argv[1], "w"))
PY
	rm -f "$SOCK"
	$BIN/coved --config "$WORK/coved.json" --foreground >>"$WORK/coved.log" 2>&1 &
	COVED_PID=$!
	local i
	for i in $(seq 200); do
		[ -S "$SOCK" ] && return 0
		kill -0 "$COVED_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "coved did not start:"
	cat "$WORK/coved.log"
	return 1
}

# Also under `set -e` (the bench scripts): a coved already gone is no error.
coved_stop() {
	[ -n "${COVED_PID:-}" ] || return 0
	kill "$COVED_PID" 2>/dev/null || true
	local i
	for i in $(seq 300); do
		kill -0 "$COVED_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$COVED_PID" 2>/dev/null; then
		echo "coved did not stop in 30 s: killed"
		kill -9 "$COVED_PID" 2>/dev/null || true
	fi
	wait "$COVED_PID" 2>/dev/null || true
	COVED_PID=
}

api() {
	local m=$1 p=$2
	shift 2
	local data=()
	[ $# -gt 0 ] && data=(-H 'Content-Type: application/json' --data-binary "$1")
	curl -s --max-time 300 --unix-socket "$SOCK" -X "$m" -H "X-API-KEY: $KEY" \
		-D "$WORK/headers" -o "$WORK/body" -w '%{http_code}' "${data[@]}" "http://coved$p" \
		>"$WORK/code"
	cat "$WORK/body"
}

code() { cat "$WORK/code"; }

# jq-less field access: jget JSON EXPR (Python expression on `o`).
jget() {
	python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

# metric NAME: the value of coved's metric NAME (GET /metrics).
metric() { api GET /metrics | awk -v m="$1" '$1 == m { print $2 }'; }

# until_metric NAME VALUE SECONDS: polls coved's metric NAME (5 times a
# second) until it is VALUE; status 1 when it never was.
until_metric() {
	local i
	for i in $(seq $((${3} * 5))); do
		[ "$(metric "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

# until_true SECONDS 'shell condition': polls once a second until it holds.
until_true() {
	local n=$1 cond=$2 i
	for i in $(seq "$n"); do
		eval "$cond" && return 0
		sleep 1
	done
	return 1
}
