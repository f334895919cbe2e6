#!/usr/bin/env bash
# Cluster mode (docs/cluster.md), a load balancer and the failures of etcd
# and of a node, on one emulated host (tests/integration/cluster_lib.sh:
# 3 etcd members, 3 coved nodes on loopback).  In order: the SDK through a
# plain TCP load balancer in front of all 3 nodes (commands, stdin, 5 MB
# each way, pause and resume of a sandbox on node 2, each connection
# landing on any node); nodes 1 and 2 each place 20 creates at once on
# node 3, which has room for 10 (nodes 1 and 2 draining): node 3 gets at
# most 10, its committed vCPUs never past its capacity and back to what it
# runs once the race is over, the rest answer 503; one etcd member killed:
# creates go on; two: creates fail fast with 503, running sandboxes keep
# answering through node 1; etcd back: a paused sandbox on node 2, whose
# snapshot is on the storage all nodes share, is resumed through node 1
# once node 2 is gone (same id and token, files intact), and of two nodes
# resuming it at once one wins, the other answers 409.
source tests/integration/cluster_lib.sh
trap cluster_cleanup EXIT

CAP_VCPUS[2]=10
TTL=10 # the default: the race loads the emulated host's one CPU
cluster_up
ctl drain n2 >/dev/null && ctl drain n3 >/dev/null
N1=$(create)
ctl drain --undo n2 >/dev/null && ctl drain n1 >/dev/null
N2=$(create)
ctl drain --undo n3 >/dev/null && ctl drain n2 >/dev/null
declare -A ON=([$N1]=$(where "$N1") [$N2]=$(where "$N2"))
[ "${ON[$N1]} ${ON[$N2]}" = "n1 n2" ] && ok "one sandbox each on n1 and n2 (drain steers them)" ||
	{ not_ok "drained creates landed on: ${ON[$N1]} ${ON[$N2]}"; finish; }
# A plain TCP load balancer in front of all three nodes, each connection
# to the next node in turn: the SDK's requests for N2 land on any node.
LB=$((BASE + 10))
python3 tests/integration/rr_proxy.py "$LB" "127.0.0.1:${HPORT[0]}" "127.0.0.1:${HPORT[1]}" "127.0.0.1:${HPORT[2]}" >"$WORK/lb.log" 2>&1 &
LB_PID=$!
trap 'kill $LB_PID 2>/dev/null; cluster_cleanup' EXIT
for t in $(seq 50); do grep -q ready "$WORK/lb.log" && break; sleep 0.2; done
out=$(E2B_API_URL=http://127.0.0.1:$LB E2B_SANDBOX_URL=http://127.0.0.1:$LB sdk work "$N2" 5 2>&1) &&
	ok "through a plain load balancer in front of all 3 nodes to $N2 on n2: ${out#ok *: }" ||
	not_ok "through the load balancer: $(grep -m3 -iE 'error|message' <<<"$out")"

# ---- two nodes place 20 creates each at once on node 3 (room for 10) ----
# One curl per node with 20 transfers at once (--parallel): 40 curl
# processes would starve the emulated host's one CPU, etcd with it.
race() { # N: 20 creates at once through node N, "BODY STATUS" a line
	local k args=()
	for k in $(seq 20); do
		args+=(--max-time 300 -X POST -H "X-API-KEY: $KEY_A" -H 'Content-Type: application/json' -d '{"templateID": "base"}'
			-w "$k %{http_code}\n" -o "$WORK/race.$1.$k.body" "http://127.0.0.1:${HPORT[$(($1 - 1))]}/sandboxes" --next)
	done
	curl -s --parallel --parallel-immediate --parallel-max 20 "${args[@]::${#args[@]}-1}" >"$WORK/race.$1.codes" 2>/dev/null
	for k in $(seq 20); do
		printf '%s %s\n' "$(cat "$WORK/race.$1.$k.body" 2>/dev/null)" "$(awk -v k="$k" '$1 == k { print $2 }' "$WORK/race.$1.codes")"
	done >"$WORK/race.$1"
}
t0=$(date +%s)
race 1 &
r1=$!
race 2 &
r2=$!
wait $r1 $r2
took=$(($(date +%s) - t0))
got=$(cat "$WORK"/race.[12] | grep -c ' 201$')
full=$(cat "$WORK"/race.[12] | grep -c ' 503$')
on3=$(ls "$WORK/n3/state/sandboxes/" | grep -c '\.json$')
committed() { # node 3's committed vCPUs in etcd
	curl -s --max-time 5 -X POST "http://127.0.0.1:${CPORT[0]}/v3/kv/range" \
		-d "{\"key\": \"$(printf /cove/alloc/n3 | base64 -w0)\"}" | python3 -c '
import base64, json, sys
print(json.loads(base64.b64decode(json.load(sys.stdin)["kvs"][0]["value"]))["vcpus"])' 2>/dev/null
}
peak=$(committed)
# A reservation whose release etcd missed under the load is released on a
# later tick: the committed count comes back to what node 3 runs.
for t in $(seq 60); do
	[ "$(committed)" = "$on3" ] && break
	sleep 0.5
done
why=$(cat "$WORK"/race.[12] | python3 -c '
import collections, json, sys
c = collections.Counter()
for l in sys.stdin:
    if l.rstrip().endswith(" 503"):
        m = json.loads(l.rsplit(" ", 1)[0])["message"].split("sandbox: ", 1)[-1]
        c[m.split(" http")[0][:40]] += 1
print(", ".join("%d %s" % (n, m) for m, n in c.most_common()))' 2>/dev/null)
[ "$got" -ge 1 ] && [ "$got" -le 10 ] && [ "$on3" = "$got" ] && [ "$((got + full))" = 40 ] &&
	[ -n "$peak" ] && [ "$peak" -le 10 ] && [ "$(committed)" = "$on3" ] &&
	ok "40 creates placed at once by n1 and n2 on n3 (room for 10) in $took s: $got created, $full answered 503 ($why), n3 committed $peak vCPUs, then $(committed)" ||
	not_ok "placement race ($took s): $got created, $full 503, $on3 records on n3, committed $peak then $(committed): $(cat "$WORK"/race.[12] | grep -v ' 20[01]$' | sort | uniq -c | head -3)"
for id in $(cat "$WORK"/race.[12] | python3 -c '
import json, sys
for l in sys.stdin:
    if l.rstrip().endswith(" 201"): print(json.loads(l.rsplit(" ", 1)[0])["sandboxID"])' 2>/dev/null); do
	h1 DELETE "/sandboxes/$id" >/dev/null
done
ctl drain --undo n1 >/dev/null && ctl drain --undo n2 >/dev/null

# ---- etcd members lost ----
ALIVE=("$N1" "$N2")
kill "${ETCD_PID[2]}"
wait "${ETCD_PID[2]}" 2>/dev/null
h1 POST /sandboxes '{"templateID": "base"}' >/dev/null
[ "$(cat "$WORK/code")" = 201 ] && ok "one etcd member down: creates go on" || not_ok "create, one member down: $(cat "$WORK/code") $(cat "$WORK/body")"
kill "${ETCD_PID[1]}"
wait "${ETCD_PID[1]}" 2>/dev/null
t0=$(date +%s%N)
h1 POST /sandboxes '{"templateID": "base"}' >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$(cat "$WORK/code")" = 503 ] && [ "$ms" -lt 30000 ] && ok "quorum lost: a create fails with 503 in $ms ms: $(cat "$WORK/body")" ||
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
# Until both racers see node 2 gone (their views refresh on their own
# ticks): each then shows the sandbox paused from the directory.
for t in $(seq $((4 * TTL * 5))); do
	H1_MAX=3 h1 GET "/sandboxes/$N2" | grep -q '"state":"paused".*"node":"n2"' &&
		curl -s --max-time 3 -H "X-API-KEY: $KEY_A" "http://127.0.0.1:${HPORT[2]}/sandboxes/$N2" |
		grep -q '"state":"paused".*"node":"n2"' && break
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
winner=n1 loser=3
[ "$(cat "$WORK/race3.code")" = 201 ] && winner=n3 loser=1
# Taken by one node only: its record on the winner, none on the other.
# When the two requests did not overlap (a loaded host), the second finds
# it running on the winner and answers 200, as a connect does.
one=$([ -f "$WORK/$winner/state/sandboxes/$N2.json" ] && [ ! -f "$WORK/n$loser/state/sandboxes/$N2.json" ] && echo yes)
case "$codes $one" in
"201 409 yes" | "409 201 yes") ok "two nodes resume $N2 at once: $codes, taken by $winner only" ;;
"201 200 yes" | "200 201 yes") ok "two nodes resume $N2 one after the other (no overlap on this host): $codes, taken by $winner only" ;;
*) not_ok "racing resumes: $codes (record on the winner and only there: ${one:-no}): $(cat "$WORK/race1" "$WORK/race3")" ;;
esac
won=$(python3 -c 'import json,sys
o = json.load(open(sys.argv[1]))
print(o.get("envdAccessToken", ""))' "$WORK/race${winner#n}" 2>/dev/null)
[ -n "$token" ] && [ "$won" = "$token" ] && ok "resumed with the same id and access token" || not_ok "token after the takeover: '$won' against '$token'"
out=$(sdk cat "$N2" /root/kept.txt 2>&1)
[ "$out" = kept ] && ok "its files intact, read through node 1 on $winner" || not_ok "files after the takeover: $out"
finish
