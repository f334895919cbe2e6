#!/usr/bin/env bash
# Cluster mode (docs/cluster.md) on one emulated host: a 3-member etcd
# cluster and 3 coved nodes on loopback, each with its own state dir, port,
# runtime dir, cgroup parent and jail uid range.  The unmodified e2b SDK
# (tests/e2b/cluster.mjs) is pointed at node 1 only.  In order:
#   9 creates land on all 3 nodes; commands with stdin, 50 MB each way,
#   pause and resume for sandboxes on nodes 2 and 3 through node 1; the
#   list shows all 9, tenant B none; etcd writes per lifecycle (<= 4);
#   node 3's coved SIGKILLed and restarted: its sandboxes re-adopted, none
#   dead; node 3 lost (its coved frozen past the lease): its sandboxes dead
#   with the reason within 2x TTL, creates go on, and node 3 coming back
#   fences them (its VMMs stopped) instead of resurrecting them; one etcd
#   member killed: creates go on; two: creates fail fast with 503, running
#   sandboxes keep answering through node 1; etcd back: a paused sandbox on
#   node 2, whose snapshot is on the storage all nodes share, is resumed
#   through node 1 once node 2 is gone (same id and token, files intact),
#   and of two nodes resuming it at once one wins, the other answers 409.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
ok() { echo "ok - [${SECONDS}s] $*"; }
NODE=${NODE:-/usr/bin/node}
[ -x "$NODE" ] || { echo "skip: no $NODE"; exit 77; }
[ -d tests/e2b/node_modules/e2b ] || { echo "skip: tests/e2b/node_modules is missing (scripts/install-deps)"; exit 77; }
command -v etcd >/dev/null || { echo "skip: etcd is not installed (scripts/install-deps)"; exit 77; }
coved_env
TTL=6
KEY_A=cluster-a-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
KEY_B=cluster-b-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf 'alpha:%s\nbeta:%s\n' "$KEY_A" "$KEY_B" >"$WORK/keys"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/secret"
chmod 600 "$WORK/keys" "$WORK/secret"
BASE=$((20000 + RANDOM % 20000))
CPORT=($BASE $((BASE + 1)) $((BASE + 2)))
PPORT=($((BASE + 3)) $((BASE + 4)) $((BASE + 5)))
HPORT=($((BASE + 6)) $((BASE + 7)) $((BASE + 8)))
ENDPOINTS=$(printf '"http://127.0.0.1:%s",' "${CPORT[@]}")
ENDPOINTS="[${ENDPOINTS%,}]"
declare -a ETCD_PID COVED

etcd_start() { # I
	local i=$1 init="" k
	for k in 0 1 2; do init+="e$k=http://127.0.0.1:${PPORT[$k]},"; done
	etcd --name "e$i" --data-dir "$WORK/etcd$i" \
		--listen-client-urls "http://127.0.0.1:${CPORT[$i]}" --advertise-client-urls "http://127.0.0.1:${CPORT[$i]}" \
		--listen-peer-urls "http://127.0.0.1:${PPORT[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${PPORT[$i]}" \
		--initial-cluster "${init%,}" --initial-cluster-state new --initial-cluster-token "cove-$BASE" \
		--heartbeat-interval 300 --election-timeout 3000 >"$WORK/etcd$i.log" 2>&1 &
	ETCD_PID[$i]=$!
}

node_json() { # I (0-based): coved node n$((I+1))'s config
	local i=$1
	local n=$((i + 1)) d=$WORK/n$((i + 1))
	mkdir -p "$d"
	python3 - "$d/coved.json" <<PY
import json, sys
json.dump({"socket": "$d/coved.sock", "state_dir": "$d/state", "api_keys_file": "$WORK/keys",
           "tcp": "127.0.0.1:${HPORT[$i]}", "network": False, "memory_mib": 128,
           "templates_dir": "$COVE_TEMPLATE_DIR", "runtime_dir": "$d/rt",
           "cgroup_parent": "/sys/fs/cgroup/cove-itest-n$n", "jail_ids": "$((200000 + i * 1000))-$((200000 + i * 1000 + 999))",
           "net_indexes": "$((i * 100))-$((i * 100 + 99))",
           "cluster": {"etcd": $ENDPOINTS, "node_id": "n$n", "advertise": "http://127.0.0.1:${HPORT[$i]}",
                       "lease_ttl_s": $TTL, "secret_file": "$WORK/secret",
                       "shared_snapshot_dir": "$WORK/shared",
                       "capacity": {"vcpus": 8, "memory_mib": 4096}}}, open(sys.argv[1], "w"))
PY
}

node_start() { # I (0-based): coved node n$((I+1))
	local i=$1
	local n=$((i + 1)) d=$WORK/n$((i + 1))
	node_json "$i" || return 1
	$BIN/coved --config "$d/coved.json" --foreground >>"$d/coved.log" 2>&1 &
	COVED[$i]=$!
	local k
	for k in $(seq 300); do
		curl -s -o /dev/null --max-time 2 "http://127.0.0.1:${HPORT[$i]}/health" && return 0
		kill -0 "${COVED[$i]}" 2>/dev/null || break
		sleep 0.2
	done
	echo "node n$n did not start:"
	tail -20 "$d/coved.log"
	return 1
}

# where ID: the node (n1..n3) whose state dir has ID's record.
where() {
	local n
	for n in 1 2 3; do [ -e "$WORK/n$n/state/sandboxes/$1.json" ] && { echo "n$n"; return; }; done
	echo none
}

# h1 METHOD PATH [BODY]: tenant A's request to node 1 over TCP; status in $WORK/code.
h1() {
	local data=()
	[ $# -gt 2 ] && data=(-H 'Content-Type: application/json' --data-binary "$3")
	curl -s --max-time "${H1_MAX:-60}" -X "$1" -H "X-API-KEY: $KEY_A" -o "$WORK/body" -w '%{http_code}' "${data[@]}" \
		"http://127.0.0.1:${HPORT[0]}$2" >"$WORK/code"
	cat "$WORK/body"
}

dir_state() { # ID: "STATE shared|unshared NODE" of its directory record, read from etcd
	curl -s --max-time 5 -X POST "http://127.0.0.1:${CPORT[0]}/v3/kv/range" \
		-d "{\"key\": \"$(printf '/cove/sandboxes/%s' "$1" | base64 -w0)\"}" | python3 -c '
import base64, json, sys
o = json.load(sys.stdin)
r = json.loads(base64.b64decode(o["kvs"][0]["value"])) if o.get("kvs") else None
print("%s %s %s" % (r["state"], "shared" if r.get("shared") else "unshared", r["node"]) if r else "none")' 2>/dev/null
}

writes() { # the etcd write transactions of all live nodes
	local n t=0 w
	for n in 1 2 3; do
		w=$(curl -s --max-time 10 --unix-socket "$WORK/n$n/coved.sock" -H "X-API-KEY: $KEY_A" http://coved/cluster |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["self"]["etcd_writes"])' 2>/dev/null) || w=0
		t=$((t + w))
	done
	echo $t
}

sdk() { (cd tests/e2b && timeout 600 "$NODE" cluster.mjs "$@"); }

cluster_cleanup() {
	local i d
	for i in 0 1 2; do
		[ -n "${COVED[$i]:-}" ] && kill -CONT "${COVED[$i]}" 2>/dev/null && kill "${COVED[$i]}" 2>/dev/null
		[ -n "${ETCD_PID[$i]:-}" ] && kill "${ETCD_PID[$i]}" 2>/dev/null
	done
	if [ "$FAILED" != 0 ]; then
		for i in 1 2 3; do echo "--- n$i/coved.log"; tail -n 15 "$WORK/n$i/coved.log"; done
	fi
	for d in "$WORK"/n*/rt; do
		for s in "$d"/*/; do [ -d "$s" ] && COVE_RUNTIME_DIR=$d $cove stop "$(basename "$s")" >/dev/null 2>&1; done
	done
	wait 2>/dev/null
	rmdir /sys/fs/cgroup/cove-itest-n[123] 2>/dev/null
	cove_cleanup
}
trap cluster_cleanup EXIT

mkdir -p "$WORK/shared"
for i in 0 1 2; do etcd_start $i; done
for t in $(seq 200); do
	curl -s --max-time 2 "http://127.0.0.1:${CPORT[0]}/health" | grep -q '"true"' && break
	sleep 0.3
done
curl -s --max-time 2 "http://127.0.0.1:${CPORT[0]}/health" | grep -q '"true"' && ok "etcd: 3 members, healthy" ||
	{ not_ok "etcd did not become healthy: $(tail -3 "$WORK/etcd0.log")"; finish; }
for i in 0 1 2; do node_start $i || { not_ok "node n$((i + 1)) starts"; finish; }; done
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

export E2B_API_URL=http://127.0.0.1:${HPORT[0]} E2B_SANDBOX_URL=http://127.0.0.1:${HPORT[0]}
export E2B_API_KEY=$KEY_A E2B_API_KEY_B=$KEY_B
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
# 50 MB each way to node 2, 5 MB to node 3: the emulated host moves a few MB/s.
for w in "$N2 50" "$N3 5"; do
	set -- $w
	out=$(sdk work "$1" "$2" 2>&1) && ok "through node 1 to ${ON[$1]}: ${out#ok }" || not_ok "work on ${ON[$1]}: $(grep -m3 -iE 'error|message' <<<"$out")"
done
out=$(sdk list "${IDS[@]}" 2>&1) && ok "Sandbox.list through node 1: ${out#ok list: }" || not_ok "list: $(tail -5 <<<"$out")"

# ---- drain; create -> first exec placed on node 1 against on node 3 ----
ctl() { COVE_API_KEY=$KEY_A $BIN/cove cluster "$@" --socket "$WORK/n1/coved.sock"; }
ctl drain n2 >/dev/null && ctl drain n3 >/dev/null
st=$(ctl status)
sb=$(h1 POST /sandboxes '{"templateID": "base"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])' 2>/dev/null)
[ "$(grep -c ' draining ' <<<"$st")" = 2 ] && [ "$(where "$sb")" = n1 ] &&
	ok "cove cluster drain n2, n3: status shows them draining; a create lands on n1" ||
	not_ok "drain: the create landed on $(where "$sb"): $st"
h1 DELETE "/sandboxes/$sb" >/dev/null
# The benchmarks (COVE_CLUSTER_BENCH=1; docs/benchmarks.md): create ->
# first exec placed on node 1 against placed on node 3, both through node
# 1; an exec round trip through node 1 against direct to node 2.
if [ "${COVE_CLUSTER_BENCH:-0}" = 1 ]; then
	here=$(cd tests/e2b && timeout 300 "$NODE" bench.mjs 3 2>/dev/null)
	ctl drain n1 >/dev/null && ctl drain --undo n3 >/dev/null
	there=$(cd tests/e2b && timeout 300 "$NODE" bench.mjs 3 2>/dev/null)
	ctl drain --undo n1 >/dev/null
	echo "bench: create -> first exec through n1, placed on n1: $here; placed on n3: $there"
	fw=$(sdk rtt "$N2" 15 2>/dev/null)
	dr=$(E2B_API_URL=http://127.0.0.1:${HPORT[1]} E2B_SANDBOX_URL=http://127.0.0.1:${HPORT[1]} sdk rtt "$N2" 15 2>/dev/null)
	echo "bench: exec round trip to a sandbox on n2: through n1 $fw ms, direct $dr ms (median of 15)"
fi
ctl drain --undo n2 >/dev/null && ctl drain --undo n3 >/dev/null
[ "$(ctl status | grep -c ' ready ')" = 3 ] && ok "drain --undo: 3 nodes ready again" || not_ok "undrain: $(ctl status)"

# ---- etcd writes over one lifecycle: create, pause, resume, delete ----
w0=$(writes)
sb=$(h1 POST /sandboxes '{"templateID": "base"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])' 2>/dev/null)
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

# ---- node 3 lost: its coved frozen past its lease ----
kill -STOP "${COVED[2]}"
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
sb=$(h1 POST /sandboxes '{"templateID": "base"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])' 2>/dev/null)
[ "$(cat "$WORK/code")" = 201 ] && [ "$(where "$sb")" != n3 ] && ok "a create during the loss lands on $(where "$sb")" ||
	not_ok "create with node 3 lost: $(cat "$WORK/code") $(cat "$WORK/body")"
kill -CONT "${COVED[2]}"
for t in $(seq 150); do
	left=0
	for id in "${ON3[@]}"; do [ -d "$WORK/n3/rt/$id" ] && left=$((left + 1)); done
	[ "$left" = 0 ] && break
	sleep 0.2
done
still=$(h1 GET "/sandboxes/${ON3[0]}")
[ "$left" = 0 ] && grep -q '"state":"dead"' <<<"$still" && ok "node 3 back: its sandboxes fenced (VMMs stopped), still dead" ||
	not_ok "node 3 back: $left VMMs left; $still"

# ---- etcd members lost ----
ALIVE=("$(on n1 | head -1)" "$N2")
kill "${ETCD_PID[2]}"
wait "${ETCD_PID[2]}" 2>/dev/null
h1 POST /sandboxes '{"templateID": "base"}' >/dev/null
[ "$(cat "$WORK/code")" = 201 ] && ok "one etcd member down: creates go on" || not_ok "create, one member down: $(cat "$WORK/code") $(cat "$WORK/body")"
kill "${ETCD_PID[1]}"
wait "${ETCD_PID[1]}" 2>/dev/null
t0=$(date +%s%N)
h1 POST /sandboxes '{"templateID": "base"}' >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(cat "$WORK/code")" = 503 ] && [ "$ms" -lt 15000 ] && ok "quorum lost: a create fails with 503 in $ms ms: $(cat "$WORK/body")" ||
	not_ok "create without quorum: $(cat "$WORK/code") in $ms ms: $(cat "$WORK/body")"
out=$(sdk alive "${ALIVE[@]}" 2>&1) && ok "quorum lost: sandboxes on $(for id in "${ALIVE[@]}"; do printf '%s ' "${ON[$id]}"; done)answer through node 1" ||
	{ not_ok "without quorum: $(grep -m3 -iE 'error|message' <<<"$out")"; tail -n 8 "$WORK/n1/coved.log" "$WORK/n2/coved.log"; }

# ---- etcd back; node 2 gone with a paused sandbox on shared storage ----
for i in 1 2; do etcd_start $i; done
for t in $(seq 100); do
	h1 POST "/sandboxes/$N2/pause" >/dev/null
	[ "$(cat "$WORK/code")" = 204 ] && break
	sleep 0.5
done
[ "$(cat "$WORK/code")" = 204 ] && ls "$WORK/shared/records/$N2.json" >/dev/null 2>&1 &&
	ok "etcd back: $N2 on n2 paused through node 1, its snapshot and record on the shared storage" ||
	not_ok "pause of $N2 after etcd came back: $(cat "$WORK/code") $(cat "$WORK/body")"
# The directory says so (etcd, read directly) before node 2 goes.
for t in $(seq 100); do
	[ "$(dir_state "$N2")" = "paused shared n2" ] && break
	sleep 0.3
done
[ "$(dir_state "$N2")" = "paused shared n2" ] && ok "the directory has $N2 paused, shared, on n2" ||
	not_ok "directory record of $N2: $(dir_state "$N2")"
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$WORK/n2/state/sandboxes/$N2.json")
kill "${COVED[1]}"
wait "${COVED[1]}" 2>/dev/null
for t in $(seq $((4 * TTL * 5))); do
	H1_MAX=3 h1 GET "/sandboxes/$N2" | grep -q '"state":"paused".*"node":"n2"' && break
	sleep 0.2
done
# Both resume at once: through node 1 and through node 3.
racers=()
for n in 1 3; do
	curl -s --max-time 300 -X POST -H "X-API-KEY: $KEY_A" -H 'Content-Type: application/json' -d '{}' \
		-o "$WORK/race$n" -w '%{http_code}' "http://127.0.0.1:${HPORT[$((n - 1))]}/v2/sandboxes/$N2/connect" >"$WORK/race$n.code" &
	racers+=($!)
done
wait "${racers[@]}"
codes="$(cat "$WORK/race1.code") $(cat "$WORK/race3.code")"
case $codes in "201 409" | "409 201") ok "two nodes resume $N2 at once: $codes" ;; *) not_ok "racing resumes: $codes: $(cat "$WORK/race1" "$WORK/race3")" ;; esac
won=$(cat "$WORK/race1" "$WORK/race3" | python3 -c 'import json,sys
for l in sys.stdin.read().replace("}{", "}\n{").splitlines():
    o = json.loads(l)
    if "envdAccessToken" in o: print(o["envdAccessToken"])' 2>/dev/null)
[ -n "$token" ] && [ "$won" = "$token" ] && ok "resumed with the same id and access token" || not_ok "token after the takeover: '$won' against '$token'"
out=$(sdk cat "$N2" /root/kept.txt 2>&1)
winner=n1
[ "$(cat "$WORK/race3.code")" = 201 ] && winner=n3
[ "$out" = kept ] && ok "its files intact, read through node 1 on $winner" || not_ok "files after the takeover: $out"
finish
