# Helpers for the cluster tests (test_cluster.sh, test_cluster_failover.sh
# source it; runs inside scripts/kvm-host): a 3-member etcd cluster and 3
# coved nodes on loopback, each with its own state dir, port, runtime dir,
# cgroup parent, jail uid range and network index range.
#   cluster_up          etcd healthy, then nodes n1..n3 (CAP_VCPUS[I]: node
#                       I's capacity in vCPUs, default 8); the SDK's
#                       environment points at node 1
#   etcd_start I, node_json I, node_start I (I 0-based)
#   where ID            the node whose state dir has ID's record
#   h1 METHOD PATH [BODY]  tenant A to node 1 over TCP; status in $WORK/code
#   create              one create through node 1; prints its id
#   ctl ARGS            cove cluster ARGS through node 1's socket
#   dir_state ID        "STATE shared|unshared NODE" of its record in etcd
#   writes              the etcd write transactions of all live nodes
#   conns               node 1's connections to others, "OPENED/REUSED"
#   sdk STEP ARGS       the e2b SDK (tests/e2b/cluster.mjs)
#   kill_vmms N         SIGKILL node N's cove-vmm processes
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
declare -a ETCD_PID COVED CAP_VCPUS

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

# disk_mib 128: the minimal image's 64 MiB leaves just under 50 MiB free,
# less than test_cluster's 50 MiB transfers once the agent grew.
node_json() { # I (0-based): coved node n$((I+1))'s config
	local i=$1
	local n=$((i + 1)) d=$WORK/n$((i + 1))
	mkdir -p "$d"
	python3 - "$d/coved.json" <<PY
import json, sys
json.dump({"socket": "$d/coved.sock", "state_dir": "$d/state", "api_keys_file": "$WORK/keys",
           "tcp": "127.0.0.1:${HPORT[$i]}", "network": False, "memory_mib": 128, "disk_mib": 128,
           "templates_dir": "$COVE_TEMPLATE_DIR", "runtime_dir": "$d/rt",
           "cgroup_parent": "/sys/fs/cgroup/cove-itest-n$n", "jail_ids": "$((200000 + i * 1000))-$((200000 + i * 1000 + 999))",
           "net_indexes": "$((i * 100))-$((i * 100 + 99))",
           "cluster": {"etcd": $ENDPOINTS, "node_id": "n$n", "advertise": "http://127.0.0.1:${HPORT[$i]}",
                       "lease_ttl_s": $TTL, "secret_file": "$WORK/secret",
                       "shared_snapshot_dir": "$WORK/shared",
                       "capacity": {"vcpus": ${CAP_VCPUS[$i]:-8}, "memory_mib": 4096}}}, open(sys.argv[1], "w"))
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

conns() { # node 1's kept connections to other nodes: "OPENED/REUSED"
	curl -s --max-time 10 --unix-socket "$WORK/n1/coved.sock" -H "X-API-KEY: $KEY_A" http://coved/cluster |
		python3 -c 'import json,sys; c = json.load(sys.stdin)["self"]["node_connections"]; print("%d/%d" % (c["opened"], c["reused"]))' 2>/dev/null
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

cluster_up() {
	mkdir -p "$WORK/shared"
	local i t
	for i in 0 1 2; do etcd_start $i; done
	for t in $(seq 200); do
		curl -s --max-time 2 "http://127.0.0.1:${CPORT[0]}/health" | grep -q '"true"' && break
		sleep 0.3
	done
	curl -s --max-time 2 "http://127.0.0.1:${CPORT[0]}/health" | grep -q '"true"' && ok "etcd: 3 members, healthy" ||
		{ not_ok "etcd did not become healthy: $(tail -3 "$WORK/etcd0.log")"; finish; }
	for i in 0 1 2; do node_start $i || { not_ok "node n$((i + 1)) starts"; finish; }; done
	export E2B_API_URL=http://127.0.0.1:${HPORT[0]} E2B_SANDBOX_URL=http://127.0.0.1:${HPORT[0]}
	export E2B_API_KEY=$KEY_A E2B_API_KEY_B=$KEY_B
}

ctl() { COVE_API_KEY=$KEY_A $BIN/cove cluster "$@" --socket "$WORK/n1/coved.sock"; }
create() { h1 POST /sandboxes '{"templateID": "base", "timeout": 3600}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])' 2>/dev/null; }

# kill_vmms N: SIGKILL every cove-vmm of node N (its registry's pids).
kill_vmms() {
	local m pid
	for m in "$WORK/n$1/rt"/*/meta.json; do
		[ -e "$m" ] || continue
		pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$m" 2>/dev/null)
		[ -n "$pid" ] && [ "$pid" -gt 1 ] && kill -9 "$pid" 2>/dev/null
	done
}
