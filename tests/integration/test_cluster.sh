#!/usr/bin/env bash
# Cluster mode (docs/cluster.md), the everyday paths and a lost node, on one
# emulated host (tests/integration/cluster_lib.sh: 3 etcd members, 3 coved
# nodes on loopback).  The unmodified e2b SDK (tests/e2b/cluster.mjs) is
# pointed at node 1 only.  In order: a node whose ranges collide does not
# start; 9 creates land on all 3 nodes; commands with stdin, 50 MB each
# way, pause and resume for sandboxes on nodes 2 and 3 through node 1; the
# list shows all 9, tenant B none; drain; etcd writes per lifecycle (<= 4);
# node 3's coved SIGKILLed and restarted: its sandboxes re-adopted, none
# dead; node 3 lost (coved and its VMMs killed): its sandboxes dead with
# the reason within 2x TTL, creates go on, and node 3 coming back does not
# resurrect them.  test_cluster_failover.sh has etcd's failures, the
# takeover of a paused sandbox and the placement race.
source tests/integration/cluster_lib.sh
trap cluster_cleanup EXIT

cluster_up

# A fourth coved on this host with node 1's jail uids but a runtime dir of
# its own would hand out the same uids: it does not start, and says why.
HPORT[3]=$((BASE + 9))
node_json 3 && sed -i 's/"jail_ids": "[0-9-]*"/"jail_ids": "200500-200600"/' "$WORK/n4/coved.json"
out=$(timeout 60 $BIN/coved --config "$WORK/n4/coved.json" --foreground 2>&1)
rc=$?
[ "$rc" != 0 ] && grep -q "node n1 on this host.*jail_ids [0-9-]* and [0-9-]* overlap" <<<"$out" &&
	ok "a node whose jail uids overlap node 1's on this host does not start: $(tail -1 <<<"$out")" ||
	not_ok "colliding node: rc $rc: $out"
st=$(COVE_API_KEY=$KEY_A $BIN/cove cluster status --socket "$WORK/n1/coved.sock" 2>&1)
[ "$(grep -c ' ready ' <<<"$st")" = 3 ] && ok "cove cluster status: 3 nodes ready" || not_ok "cluster status: $st"

t0=$(date +%s)
mapfile -t IDS < <(sdk create 9 2>"$WORK/create.err")
[ "${#IDS[@]}" = 9 ] && ok "9 creates through node 1 ($(($(date +%s) - t0)) s)" ||
	{ not_ok "creates: ${#IDS[@]} of 9: $(tail -3 "$WORK/create.err")"; finish; }
declare -A ON
for id in "${IDS[@]}"; do ON[$id]=$(where "$id"); done
per=$(for id in "${IDS[@]}"; do echo "${ON[$id]}"; done | sort | uniq -c | tr '\n' ' ')
[ "$(for id in "${IDS[@]}"; do echo "${ON[$id]}"; done | sort -u | grep -c '^n')" = 3 ] &&
	ok "placed on all 3 nodes: $per" || not_ok "placement: $per"
on() { for id in "${IDS[@]}"; do [ "${ON[$id]}" = "$1" ] && echo "$id"; done; }
N2=$(on n2 | head -1) N3=$(on n3 | head -1)
for id in "$N2" "$N3"; do
	out=$(sdk work "$id" 50 2>&1) && ok "through node 1 to ${ON[$id]}: ${out#ok }" || not_ok "work on ${ON[$id]}: $(grep -m3 -iE 'error|message' <<<"$out")"
done
out=$(sdk list "${IDS[@]}" 2>&1) && ok "Sandbox.list through node 1: ${out#ok list: }" || not_ok "list: $(tail -5 <<<"$out")"

# ---- drain; create -> first exec placed on node 1 against on node 3 ----
ctl drain n2 >/dev/null && ctl drain n3 >/dev/null
st=$(ctl status)
sb=$(create)
[ "$(grep -c ' draining ' <<<"$st")" = 2 ] && [ "$(where "$sb")" = n1 ] &&
	ok "cove cluster drain n2, n3: status shows them draining; a create lands on n1" ||
	not_ok "drain: the create landed on $(where "$sb"): $st"
# The console's nodes panel (GET /nodes): three nodes, n2 and n3 draining,
# n1's commitment counting the sandbox just placed there.
nodes=$(h1 GET /nodes)
if python3 -c '
import json, sys
n = {x["id"]: x for x in json.loads(sys.argv[1])}
assert sorted(n) == ["n1", "n2", "n3"], sorted(n)
assert [n[k]["draining"] for k in ("n1", "n2", "n3")] == [False, True, True]
assert all(x["leaseOk"] and x["vcpus"] > 0 and x["memoryMiB"] > 0 for x in n.values())
assert n["n1"]["vcpusCommitted"] >= 1 and n["n1"]["memoryMiBCommitted"] > 0
assert not any("addr" in k.lower() for x in n.values() for k in x)
' "$nodes" 2>"$WORK/nodes.err"; then
	ok "GET /nodes: n1-n3 with capacity and commitment, n2 and n3 draining, no addresses"
else not_ok "GET /nodes: $(tail -n 1 "$WORK/nodes.err"): $nodes"; fi
h1 DELETE "/sandboxes/$sb" >/dev/null
# The benchmarks (COVE_CLUSTER_BENCH=1, with COVE_ITEST_TIMEOUT=1200;
# docs/benchmarks.md): create -> first exec of a sandbox on node 3 through
# node 1 against direct; an exec round trip through node 1 against direct
# to node 2.
if [ "${COVE_CLUSTER_BENCH:-0}" = 1 ]; then
	# Placed on node 3 (the others draining), created and first exec'd
	# through node 1 against through node 3 itself; two rounds each way,
	# alternating, each run's first create (the SDK's warm-up) dropped.
	ctl drain n1 >/dev/null && ctl drain --undo n3 >/dev/null
	bench() { (cd tests/e2b && timeout 300 "$NODE" bench.mjs 4 2>/dev/null | python3 -c 'import json,sys; print(" ".join(map(str, json.load(sys.stdin)["sdk_create_first_exec_ms"][1:])))'); }
	here="" there=""
	for round in 1 2; do
		there+="$(bench) "
		here+="$(E2B_API_URL=http://127.0.0.1:${HPORT[2]} E2B_SANDBOX_URL=http://127.0.0.1:${HPORT[2]} bench) "
	done
	ctl drain --undo n1 >/dev/null
	med() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
	echo "bench: create -> first exec of a sandbox placed on n3 (ms), through n1: $there(median $(med <<<"$there")); direct to n3: $here(median $(med <<<"$here"))"
	c0=$(conns)
	read -r fw dr < <(sdk rtt "$N2" 30 "http://127.0.0.1:${HPORT[1]}" 2>/dev/null)
	echo "bench: exec round trip to a sandbox on n2: through n1 $fw ms, direct $dr ms (medians of 30, alternating); n1's connections to other nodes opened/reused: $c0 before, $(conns) after"
fi
ctl drain --undo n2 >/dev/null && ctl drain --undo n3 >/dev/null
[ "$(ctl status | grep -c ' ready ')" = 3 ] && ok "drain --undo: 3 nodes ready again" || not_ok "undrain: $(ctl status)"

# ---- etcd writes over one lifecycle: create, pause, resume, delete ----
w0=$(writes)
sb=$(create)
lnode=$(where "$sb")
h1 POST "/sandboxes/$sb/pause" >/dev/null
h1 POST "/sandboxes/$sb/resume" '{}' >/dev/null
h1 DELETE "/sandboxes/$sb" >/dev/null
w1=$(writes)
[ -n "$sb" ] && [ $((w1 - w0)) -le 4 ] && [ $((w1 - w0)) -ge 4 ] && ok "etcd writes per lifecycle (create, pause, resume, delete on $lnode): $((w1 - w0))" ||
	not_ok "etcd writes per lifecycle: $((w1 - w0)) (sandbox '$sb', last status $(cat "$WORK/code"))"

# ---- node 3's coved SIGKILLed, its VMMs left running: re-adopted ----
kill -9 "${COVED[2]}"
wait "${COVED[2]}" 2>/dev/null
node_start 2 || not_ok "node 3 restarts"
mapfile -t ON3 < <(on n3)
out=$(sdk alive "${ON3[@]}" 2>&1) && ok "node 3 restarted after SIGKILL: its ${#ON3[@]} sandboxes answer through node 1" ||
	not_ok "after the SIGKILL: $(tail -3 <<<"$out")"
dead=0
for id in "${IDS[@]}"; do h1 GET "/sandboxes/$id" | grep -q '"state":"dead"' && dead=$((dead + 1)); done
[ "$dead" = 0 ] && ok "none reported dead" || not_ok "$dead reported dead after a coved restart"

# ---- node 3 lost: its coved and its VMMs killed ----
kill -9 "${COVED[2]}"
kill_vmms 3
wait "${COVED[2]}" 2>/dev/null
t0=$(date +%s)
for t in $(seq $((4 * TTL * 5))); do
	all=1
	for id in "${ON3[@]}"; do H1_MAX=3 h1 GET "/sandboxes/$id" | grep -q '"state":"dead".*node lost' || { all=0; break; }; done
	[ "$all" = 1 ] && break
	sleep 0.2
done
lost_s=$(($(date +%s) - t0))
[ "$all" = 1 ] && [ "$lost_s" -le $((2 * TTL)) ] && ok "node 3 lost: its sandboxes dead, 'node lost', after $lost_s s (TTL $TTL s)" ||
	not_ok "node 3 lost: dead after $lost_s s? $(h1 GET "/sandboxes/${ON3[0]}")"
placed=""
for k in 1 2; do
	sb=$(create)
	[ "$(cat "$WORK/code")" = 201 ] && [ "$(where "$sb")" != n3 ] || break
	placed+="$(where "$sb") "
done
[ "$k" = 2 ] && [ "$(cat "$WORK/code")" = 201 ] && ok "creates during the loss land on: $placed" ||
	not_ok "create with node 3 lost: $(cat "$WORK/code") $(cat "$WORK/body") on $(where "$sb")"
node_start 2 || not_ok "node 3 restarts"
back=0
for t in $(seq 50); do
	back=1
	for id in "${ON3[@]}"; do
		H1_MAX=5 h1 GET "/sandboxes/$id" | grep -q '"state":"dead".*node lost' || back=0
		curl -s --max-time 5 -H "X-API-KEY: $KEY_A" "http://127.0.0.1:${HPORT[2]}/sandboxes/$id" | grep -q '"state":"dead"' || back=0
	done
	[ "$back" = 1 ] && break
	sleep 0.2
done
alive=$(curl -s --max-time 10 -H "X-API-KEY: $KEY_A" "http://127.0.0.1:${HPORT[2]}/v2/sandboxes?state=running" |
	python3 -c 'import json,sys; print(len(json.load(sys.stdin)))' 2>/dev/null)
[ "$back" = 1 ] && [[ "$(dir_state "${ON3[0]}")" == "dead "*" n3" ]] && ok "node 3 back: its sandboxes still dead, through node 1, node 3 and etcd ($alive running listed)" ||
	not_ok "node 3 back: $(h1 GET "/sandboxes/${ON3[0]}"); directory: $(dir_state "${ON3[0]}")"
finish
