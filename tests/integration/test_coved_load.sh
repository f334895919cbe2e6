#!/usr/bin/env bash
# Load: N (default 8 in the suite; COVED_LOAD_N=64 is the issue's figure,
# in docs/benchmarks.md: many minutes on the emulated host's one CPU)
# creates at once through coved, then the first exec
# in each, then N deletes at once.  Every create must answer 201 (or, over
# a limit, a clean JSON error: counted and reported as a failure), every
# exec must answer, every delete 204, and no cove-vmm may be left.  The
# create and create->first-exec latencies' p50/p99 are printed (figures
# for docs/benchmarks.md, not asserted).  The emulated host has 4 GiB:
# sandboxes get 64 MiB and the minimal image; COVED_LOAD_N overrides N,
# COVED_LOAD_MIB the memory.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
coved_env
N=${COVED_LOAD_N:-8}
MIB=${COVED_LOAD_MIB:-64}
coved_start '"memory_mib": '"$MIB"', "max_creates": 64, "max_sandboxes": 128, "boot_timeout_s": 1200, "tcp": "127.0.0.1:39170"' ||
	{ not_ok "coved starts"; finish; }
mkdir -p "$WORK/load"
now() { date +%s.%N; }
# The sandboxID of a create's answer, without a python3 per create: 64 of
# them (through pyenv's shims) took minutes of the one emulated CPU that
# the creates were measured on.
sandbox_id() {
	local body re='"sandboxID" *: *"([A-Za-z0-9_-]+)"'
	body=$(<"$1")
	[[ $body =~ $re ]] && echo "${BASH_REMATCH[1]}"
}
one() {
	local i=$1 t0 t1 t2 id
	t0=$(now)
	curl -s --max-time 1500 --unix-socket "$SOCK" -X POST -H "X-API-KEY: $KEY" -d '{"timeout":3600}' \
		-o "$WORK/load/b$i" -w '%{http_code}' http://coved/v2/sandboxes >"$WORK/load/c$i"
	t1=$(now)
	if [ "$(cat "$WORK/load/c$i")" = 201 ]; then
		id=$(sandbox_id "$WORK/load/b$i")
		# With every sandbox booting on one emulated CPU an exec may find its
		# connection refused or timed out: up to 3 tries, each error kept.
		local try
		for try in 1 2 3; do
			if [ "$($cove exec --timeout 600 "$id" -- echo first 2>"$WORK/load/e$i.$try")" = first ]; then
				t2=$(now)
				echo "$t0 $t1 $t2 $try" >"$WORK/load/t$i"
				break
			fi
			sleep 2
		done
	fi
}
start=$(now)
pids=()
for i in $(seq "$N"); do one "$i" & pids+=($!); done
wait "${pids[@]}"
echo "creates and first execs: $(echo "$(now) - $start" | bc) s for $N"
created=$(grep -l '^201$' "$WORK"/load/c* | wc -l)
execd=$(ls "$WORK"/load/t* 2>/dev/null | wc -l)
bad=$(grep -L '^201$' "$WORK"/load/c* 2>/dev/null)
for f in $bad; do
	b=$WORK/load/b${f##*/c}
	echo "create $(basename "$f"): $(cat "$f") $(head -c 300 "$b")"
done
clean=1
for f in $bad; do
	b=$WORK/load/b${f##*/c}
	python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert isinstance(o["code"],int) and o["message"]' "$b" 2>/dev/null || clean=0
done
[ "$clean" = 1 ] && ok "every failed create (if any) answered a JSON error" || not_ok "a create failed without a JSON error"
[ "$created" = "$N" ] && ok "$N of $N creates succeeded" || not_ok "$created of $N creates succeeded"
# The first exec must answer in every sandbox.  With 64 guests on the
# emulated host's one CPU a guest may take longer than cove-vmm's 10 s to
# accept a host connection ("the guest agent is not listening"): the
# tries above, each error kept (docs/benchmarks.md).
[ "$execd" = "$created" ] && ok "first exec in all $execd" || not_ok "first exec in only $execd of $created"
retried=$(grep -c ' [23]$' "$WORK"/load/t* 2>/dev/null | grep -vc ':0$')
echo "execs that needed a retry: $retried; first errors seen:"
cat "$WORK"/load/e* 2>/dev/null | sort | uniq -c | sort -rn | head -5
python3 - "$WORK/load" <<'PY'
import glob, sys
c, e = [], []
for f in glob.glob(sys.argv[1] + "/t*"):
    t0, t1, t2 = map(float, open(f).read().split()[:3])
    c.append(t1 - t0); e.append(t2 - t0)
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
if c:
    print("load: n=%d create p50 %.2f s p99 %.2f s; create->first exec p50 %.2f s p99 %.2f s"
          % (len(c), pct(c, 50), pct(c, 99), pct(e, 50), pct(e, 99)))
PY
curl -s --unix-socket "$SOCK" -H "X-API-KEY: $KEY" http://coved/metrics | grep -E '^coved_(sandboxes|create_seconds_(sum|count)|limit)' 
rss=$(awk '/VmRSS/ {print $2}' /proc/"$COVED_PID"/status)
echo "coved RSS with $created sandboxes: $rss kB"
# coved's own CPU time: its waits for the VMMs must not spin (a 1 ms
# retry loop once took 117 s of CPU for 24 creates on the emulated host).
cpu=$(awk '{ printf "%.1f", ($14 + $15) / 100 }' /proc/"$COVED_PID"/stat)
echo "coved CPU time for $N creates and first execs: $cpu s"
c=$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-KEY: $KEY" http://127.0.0.1:39170/v2/sandboxes)
[ "$c" = 200 ] && ok "the TCP listener serves the same API" || not_ok "TCP listener: $c"
if command -v wrk >/dev/null; then
	wrk -t1 -c8 -d5s -H "X-API-KEY: $KEY" "http://127.0.0.1:39170/v2/sandboxes" 2>&1 |
		sed -n "s/^Requests\/sec: */load: GET \/v2\/sandboxes with $created sandboxes: /p; s/^ *Latency */load: wrk latency /p"
fi
ids=$(for f in "$WORK"/load/b*; do sandbox_id "$f"; done)
start=$(now)
pids=()
for s in $ids; do
	curl -s --max-time 600 --unix-socket "$SOCK" -X DELETE -H "X-API-KEY: $KEY" -o /dev/null \
		-w '%{http_code}\n' "http://coved/sandboxes/$s" >"$WORK/load/d$s" &
	pids+=($!)
done
wait "${pids[@]}"
echo "deletes: $(echo "$(now) - $start" | bc) s for $(echo "$ids" | wc -w)"
nd=$(cat "$WORK"/load/d* 2>/dev/null | grep -c '^204$')
[ "$nd" = "$(echo "$ids" | wc -w)" ] && ok "$nd deletes answered 204" || not_ok "only $nd deletes answered 204"
left=$($cove ls 2>/dev/null | tail -n +2 | wc -l)
[ "$left" = 0 ] && ok "no sandbox left" || not_ok "$left sandboxes left"
finish
