#!/usr/bin/env bash
# cpu.max: two sandboxes with --cpu-quota 0.5, both busy, each get half a CPU
# of host time (cpu.stat of their cgroups over 10 s, within 10%).
source tests/integration/lib.sh
cove_env
[ -f /sys/fs/cgroup/cgroup.controllers ] || { echo "skip: no cgroup v2 here"; exit 77; }

for s in qa qb; do
	$cove start --name $s --cpu-quota 0.5 >/dev/null 2>"$WORK/err" || { not_ok "start $s: $(cat "$WORK/err")"; finish; }
	max=$(cat /sys/fs/cgroup/cove/$s/cpu.max)
	[ "$max" = "50000 100000" ] && ok "$s: cpu.max $max" || not_ok "$s: cpu.max '$max'"
done
for s in qa qb; do
	timeout 60 $cove exec $s -- sh -c 'while :; do :; done' >/dev/null 2>&1 &
done
sleep 3 # both busy
usage() { awk '$1 == "usage_usec" { print $2 }' /sys/fs/cgroup/cove/$1/cpu.stat; }
a0=$(usage qa) b0=$(usage qb) t0=$(date +%s%N)
sleep 10
a1=$(usage qa) b1=$(usage qb) t1=$(date +%s%N)
for s in qa qb; do
	if [ $s = qa ]; then d=$((a1 - a0)); else d=$((b1 - b0)); fi
	share=$(echo "scale=3; $d * 1000 / ($t1 - $t0)" | bc)
	if [ "$(echo "$share >= 0.45 && $share <= 0.55" | bc)" = 1 ]; then
		ok "$s used $share CPUs over $(((t1 - t0) / 1000000)) ms (quota 0.5)"; else
		not_ok "$s used $share CPUs (quota 0.5)"; fi
done
$cove stop qa >/dev/null
$cove stop qb >/dev/null
wait
finish
