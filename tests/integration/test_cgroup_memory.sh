#!/usr/bin/env bash
# memory.max: a guest that allocates 2 GiB in a 256 MiB sandbox meets the
# guest's OOM killer, not the host's; the sandbox's cgroup stays under its
# memory.max and records no OOM kill of its own.
source tests/integration/lib.sh
cove_env
[ -f /sys/fs/cgroup/cgroup.controllers ] || { echo "skip: no cgroup v2 here"; exit 77; }

$cove start --name m --memory 256 >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
cg=/sys/fs/cgroup/cove/m
max=$(cat $cg/memory.max)
# busybox awk doubles a string until the guest runs out of memory.
$cove exec m -- awk 'BEGIN { s = "x"; while (length(s) < 2147483648) s = s s; print length(s) }' \
	>"$WORK/out" 2>&1
rc=$?
peak=$(cat $cg/memory.peak 2>/dev/null || cat $cg/memory.current)
cur=$(cat $cg/memory.current)
oom=$(awk '$1 == "oom_kill" { print $2 }' $cg/memory.events)
if [ "$rc" = 137 ] && $cove exec m -- dmesg | grep -qi "out of memory: killed process"; then
	ok "the guest's OOM killer ended the 2 GiB allocation (status $rc)"; else
	not_ok "allocation: status $rc, output $(head -c 200 "$WORK/out")"; fi
if [ "$peak" -le "$max" ] && [ "$cur" -lt "$max" ] && [ "$oom" = 0 ]; then
	ok "cgroup memory.peak $((peak >> 20)) MiB, memory.current $((cur >> 20)) MiB, memory.max $((max >> 20)) MiB, host oom_kill $oom"; else
	not_ok "cgroup: peak $peak current $cur max $max oom_kill $oom"; fi
out=$($cove exec m -- echo alive 2>&1)
[ "$out" = alive ] && ok "the sandbox still answers" || not_ok "after the OOM: $out"
$cove stop m >/dev/null
finish
