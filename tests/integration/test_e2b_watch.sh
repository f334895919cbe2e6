#!/usr/bin/env bash
# The unmodified e2b JS SDK against coved for issue 30's E2B calls:
# isRunning() (true running, false paused, false killed, false after its
# timeout: envd's /health answers as the sandbox's agent), files.watchDir
# (a recursive watch sees create, write, rename and remove, a file in a new
# folder too), getMetrics (samples whose CPU rises under a CPU loop), and
# the idle pause (autoPause + autoResume with a 5 s timeout: paused after 5 s
# of nothing, not during an 8 s command; the next command resumes it);
# named snapshots, listSnapshots and deleteSnapshot (tests/e2b/snapshots.test.mjs,
# with a second tenant's key that sees none of them).
# One coved, tests/e2b/watch.test.mjs and snapshots.test.mjs under node's
# test runner.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
NODE=${NODE:-/usr/bin/node}
[ -x "$NODE" ] || { echo "skip: no $NODE"; exit 77; }
[ -d tests/e2b/node_modules/e2b ] || { echo "skip: tests/e2b/node_modules is missing (scripts/install-deps runs npm ci there)"; exit 77; }
coved_env
KEY2=coved-test-key-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$KEY2" >>"$WORK/keys" # a bare key: a tenant of its own
PORT=$((20000 + RANDOM % 20000))
coved_start "\"tcp\": \"127.0.0.1:$PORT\"" || { not_ok "coved starts"; finish; }
export E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT E2B_API_KEY=$KEY E2B_API_KEY2=$KEY2
ok "coved on 127.0.0.1:$PORT"

if (cd tests/e2b && timeout 600 "$NODE" --test --test-concurrency=1 --test-reporter=tap watch.test.mjs) >"$WORK/watch.tap" 2>&1; then
	ok "e2b SDK isRunning, watchDir, getMetrics, idle pause, diff ($(grep -c '^ok ' "$WORK/watch.tap") tests)"
else
	not_ok "e2b SDK isRunning, watchDir, getMetrics, idle pause, diff"
fi
sed 's/^/    /' "$WORK/watch.tap" | grep -E '^    (not ok|ok|#)|Error|expected|actual' | head -60
if (cd tests/e2b && timeout 300 "$NODE" --test --test-reporter=tap snapshots.test.mjs) >"$WORK/snaps.tap" 2>&1; then
	ok "e2b SDK named snapshots, listSnapshots, deleteSnapshot ($(grep -c '^ok ' "$WORK/snaps.tap") tests)"
else
	not_ok "e2b SDK named snapshots, listSnapshots, deleteSnapshot"
fi
sed 's/^/    /' "$WORK/snaps.tap" | grep -E '^    (not ok|ok|#)|Error|expected|actual' | head -40

# The readings behind getMetrics on a sandbox coved made: the route, and
# cove stats; the VMM's resident set against its cgroup's charge, for the
# record (docs/api.md "Usage samples").
id=$(api POST /sandboxes '{"templateID": "base", "timeout": 120}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])')
sleep 5
m=$(api GET "/sandboxes/$id/metrics")
if [ "$(code)" = 200 ] && [ "$(jget "$m" 'len(o) >= 1 and o[-1]["memUsed"] > 0 and o[-1]["diskTotal"] > 0')" = True ]; then
	ok "GET /sandboxes/$id/metrics: $(jget "$m" 'len(o)') samples, the last $(jget "$m" 'o[-1]')"
else
	not_ok "GET /sandboxes/$id/metrics: $(code) $m"
fi
api GET "/sandboxes/$id/metrics?start=2&end=1" >/dev/null
[ "$(code)" = 400 ] && ok "an end before the start: 400" || not_ok "start=2&end=1: $(code)"
# Snapshot names over the API: a bad one 400; a taken one moves to the newer.
api POST "/sandboxes/$id/snapshots" '{"name": "bad name"}' >/dev/null
[ "$(code)" = 400 ] && ok "a name with a space: 400" || not_ok "a name with a space: $(code)"
a=$(api POST "/sandboxes/$id/snapshots" '{"name": "moving"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshotID"])')
b=$(api POST "/sandboxes/$id/snapshots" '{"name": "moving"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshotID"])')
l=$(api GET "/snapshots?sandboxID=$id")
if [ "$(jget "$l" '[(s["snapshotID"], s["names"]) for s in o]')" = "[('$b', ['moving']), ('$a', ['$a'])]" ]; then
	ok "the name 'moving' moved from $a to $b"
else
	not_ok "a taken name: $l"
fi
for q in 'limit=0' 'limit=1001' 'nextToken=bogus' 'name=a%20b'; do
	api GET "/snapshots?$q" >/dev/null
	[ "$(code)" = 400 ] && ok "GET /snapshots?$q: 400" || not_ok "GET /snapshots?$q: $(code)"
done
st=$($cove stats "$id" --json 2>&1) && ok "cove stats: $st" || not_ok "cove stats: $st"
pid=$($cove ls --json | python3 -c 'import json,sys; print([s["pid"] for s in json.load(sys.stdin) if s["name"] == sys.argv[1]][0])' "$id")
cg=$(awk -F: '$1 == "0" { print $3 }' "/proc/$pid/cgroup" 2>/dev/null)
echo "# cove-vmm $pid: $(grep VmRSS "/proc/$pid/status"), cgroup ${cg:-none}: memory.current $(cat "/sys/fs/cgroup$cg/memory.current" 2>/dev/null || echo -)"
api DELETE "/sandboxes/$id" >/dev/null
for s in "$b" "$a"; do
	api DELETE "/templates/$s" >/dev/null
	[ "$(code)" = 204 ] && ok "$s deleted once its sandbox went" || not_ok "delete $s: $(code) $(cat "$WORK/body")"
done
api DELETE "/templates/$a" >/dev/null
[ "$(code)" = 404 ] && ok "a second delete: 404" || not_ok "a second delete: $(code)"

# The route answers another tenant's (here: no) sandbox as a missing one.
api GET /sandboxes/nosuchsandbox0000000/metrics >/dev/null
[ "$(code)" = 404 ] && ok "metrics of an unknown sandbox: 404" || not_ok "metrics of an unknown sandbox: $(code)"
finish
