#!/usr/bin/env bash
# The unmodified e2b JS SDK (tests/e2b, pinned by its package-lock.json)
# against coved: E2B_API_URL and E2B_SANDBOX_URL both point at coved's TCP
# listener, E2B_API_KEY is the test's key.  Node's test runner runs
# tests/e2b/sdk.test.mjs (create, foreground and background commands,
# stdin, kill, list, re-attach, files, timeouts, pause/connect, kill).
# Then an exec that outlives a coved restart: started by one SDK client
# that goes away, coved is stopped and started again, and a second client
# re-attaches (commands.connect) and gets its whole output and exit code.
# Last, the benchmark: create -> first exec through the SDK against
# `cove run` in the same run (docs/benchmarks.md).
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
NODE=${NODE:-/usr/bin/node}
[ -x "$NODE" ] || { echo "skip: no $NODE"; exit 77; }
[ -d tests/e2b/node_modules/e2b ] || { echo "skip: tests/e2b/node_modules is missing (scripts/install-deps runs npm ci there)"; exit 77; }
coved_env
PORT=$((20000 + RANDOM % 20000))
coved_start "\"tcp\": \"127.0.0.1:$PORT\"" || { not_ok "coved starts"; finish; }
export E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT E2B_API_KEY=$KEY
ok "coved on $SOCK and 127.0.0.1:$PORT"

if (cd tests/e2b && timeout 900 "$NODE" --test --test-concurrency=1 --test-reporter=tap sdk.test.mjs) >"$WORK/sdk.tap" 2>&1; then
	ok "e2b SDK suite ($(grep -c '^ok ' "$WORK/sdk.tap") tests)"
else
	not_ok "e2b SDK suite"
fi
sed 's/^/    /' "$WORK/sdk.tap" | grep -E '^    (not ok|ok|#)|Error|expected|actual' | head -80

# ---- an exec started before a daemon restart ----
if line=$(cd tests/e2b && timeout 300 "$NODE" restart.mjs start 2>"$WORK/r1.err"); then
	read -r rid rpid <<<"$line"
	ok "background exec $rpid started in $rid, its client gone"
	coved_stop
	coved_start "\"tcp\": \"127.0.0.1:$PORT\"" || { not_ok "coved restarts"; finish; }
	out=$(cd tests/e2b && timeout 300 "$NODE" restart.mjs attach "$rid" "$rpid" 2>"$WORK/r2.err")
	if [ "$(jget "$out" 'o["stdout"]')" = "$(printf 'before\nafter')" ] && [ "$(jget "$out" 'o["exitCode"]')" = 7 ]; then
		ok "after the restart: re-attached, whole output and exit code 7"
	else
		not_ok "re-attach after the restart: $out $(tail -5 "$WORK/r2.err")"
	fi
else
	not_ok "restart.mjs start: $(tail -5 "$WORK/r1.err")"
fi

# ---- the exec journal has what the SDK ran (names, not values) ----
j=$(cat "$STATE"/journal/*.jsonl 2>/dev/null)
if grep -q '"type":"exec".*"env_names":\["X"\]' <<<"$j" && ! grep -qF '"from-run"' <<<"$j"; then
	ok "execs journaled with env names, never their values"
else
	not_ok "journal: $(grep '"type":"exec"' <<<"$j" | head -3)"
fi
grep -q '"type":"file".*"op":"write".*"bytes":3145728' <<<"$j" && ok "file transfers journaled" ||
	not_ok "no file write in the journal"

# ---- benchmark: create -> first exec, SDK against cove run ----
b=$(cd tests/e2b && timeout 600 "$NODE" bench.mjs 3 2>/dev/null) && echo "bench: $b"
runs=()
for i in 1 2 3; do
	t0=$(date +%s%N)
	$cove run -- true >/dev/null 2>&1 && runs+=($((($(date +%s%N) - t0) / 1000000)))
done
echo "bench: {\"cove_run_true_ms\": [$(IFS=,; echo "${runs[*]}")]}"
finish
