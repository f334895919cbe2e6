#!/usr/bin/env bash
# The unmodified e2b JS SDK against coved for issue 30's E2B calls:
# isRunning() (true running, false paused, false killed, false after its
# timeout: envd's /health answers as the sandbox's agent), files.watchDir
# (a recursive watch sees create, write, rename and remove, a file in a new
# folder too) and getMetrics (samples whose CPU rises under a CPU loop).
# One coved, tests/e2b/watch.test.mjs under node's test runner.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
NODE=${NODE:-/usr/bin/node}
[ -x "$NODE" ] || { echo "skip: no $NODE"; exit 77; }
[ -d tests/e2b/node_modules/e2b ] || { echo "skip: tests/e2b/node_modules is missing (scripts/install-deps runs npm ci there)"; exit 77; }
coved_env
PORT=$((20000 + RANDOM % 20000))
coved_start "\"tcp\": \"127.0.0.1:$PORT\"" || { not_ok "coved starts"; finish; }
export E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT E2B_API_KEY=$KEY
ok "coved on 127.0.0.1:$PORT"

if (cd tests/e2b && timeout 600 "$NODE" --test --test-concurrency=1 --test-reporter=tap watch.test.mjs) >"$WORK/watch.tap" 2>&1; then
	ok "e2b SDK isRunning, watchDir, getMetrics ($(grep -c '^ok ' "$WORK/watch.tap") tests)"
else
	not_ok "e2b SDK isRunning, watchDir, getMetrics"
fi
sed 's/^/    /' "$WORK/watch.tap" | grep -E '^    (not ok|ok|#)|Error|expected|actual' | head -60

# The route answers another tenant's (here: no) sandbox as a missing one.
api GET /sandboxes/nosuchsandbox0000000/metrics >/dev/null
[ "$(code)" = 404 ] && ok "metrics of an unknown sandbox: 404" || not_ok "metrics of an unknown sandbox: $(code)"
finish
