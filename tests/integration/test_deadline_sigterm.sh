#!/usr/bin/env bash
# A SIGTERM from timeout(1) ends a waiting `cove exec` (no --timeout) at
# once, even when the sandbox cannot answer (its cove-vmm SIGSTOPped):
# forwarded if possible, then exit 128+15 within about a second.
source tests/integration/lib.sh
cove_env
$cove start --name f >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$COVE_RUNTIME_DIR/f/meta.json")
# First a live one: the signal reaches the command, which dies of it.
t0=$(date +%s.%N)
timeout --preserve-status -k 5 -s TERM 2 $cove exec f -- sleep 100 2>"$WORK/err"
rc=$?
secs=$(echo "$(date +%s.%N) - $t0" | bc)
echo "figure: live sandbox: exec ended $secs s after start (signal at 2 s), status $rc"
if [ $rc = 143 ] && (($(echo "$secs < 3.5" | bc))); then ok "live: ended after $secs s, status 143"; else
	not_ok "live: status $rc after $secs s: $(cat "$WORK/err")"; fi
kill -STOP "$pid"
t0=$(date +%s.%N)
timeout --preserve-status -k 5 -s TERM 2 $cove exec f -- sleep 100 2>"$WORK/err"
rc=$?
secs=$(echo "$(date +%s.%N) - $t0" | bc)
kill -CONT "$pid"
echo "figure: frozen sandbox: exec ended $secs s after start (signal at 2 s), status $rc"
if [ $rc = 143 ] && (($(echo "$secs < 3.5" | bc))); then ok "frozen: ended after $secs s, status 143"; else
	not_ok "frozen: status $rc after $secs s: $(cat "$WORK/err")"; fi
finish
