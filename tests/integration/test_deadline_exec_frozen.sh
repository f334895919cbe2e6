#!/usr/bin/env bash
# A sandbox that stops answering (its cove-vmm SIGSTOPped from the host):
# `cove exec --timeout 3` gives up on its own within 8 s with a clear
# error, instead of waiting forever.
source tests/integration/lib.sh
cove_env
$cove start --name f >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
pid=$(meta_pid f)
kill -STOP "$pid"
t0=$(date +%s.%N)
err=$(timeout -k 1 40 $cove exec --timeout 3 f -- true 2>&1 >/dev/null)
rc=$?
secs=$(echo "$(date +%s.%N) - $t0" | bc)
kill -CONT "$pid"
echo "figure: exec --timeout 3 on a frozen sandbox returned after $secs s (status $rc)"
if [ $rc = 124 ] && (($(echo "$secs < 8" | bc))) &&
	[[ $err == *"did not answer within"* ]]; then
	ok "gave up after $secs s: $err"; else not_ok "status $rc after $secs s: '$err'"; fi
finish
