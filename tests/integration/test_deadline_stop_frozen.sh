#!/usr/bin/env bash
# `cove stop` of a sandbox whose cove-vmm is SIGSTOPped: the agent does not
# answer, so stop escalates (SIGTERM, SIGKILL) and the VMM is gone and its
# entry removed within 15 s.
source tests/integration/lib.sh
cove_env
$cove start --name f >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
pid=$(meta_pid f)
kill -STOP "$pid"
t0=$(date +%s.%N)
timeout -k 1 60 $cove stop f 2>"$WORK/err"
rc=$?
secs=$(echo "$(date +%s.%N) - $t0" | bc)
echo "figure: cove stop of a frozen sandbox took $secs s (status $rc)"
gone=1
[ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] && gone=0
if [ $rc = 0 ] && [ $gone = 1 ] && [ ! -e "$COVE_RUNTIME_DIR/f" ] && (($(echo "$secs < 15" | bc))); then
	ok "stopped in $secs s"; else
	not_ok "status $rc after $secs s, vmm gone=$gone, entry: $(ls "$COVE_RUNTIME_DIR")"
	kill -KILL "$pid" 2>/dev/null
fi
finish
