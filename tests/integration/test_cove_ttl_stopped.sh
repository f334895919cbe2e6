#!/usr/bin/env bash
# A sandbox whose cove-vmm cannot enforce its own --ttl (SIGSTOPped from
# the host) is still ended by libcove: cove run's wait is bounded by the
# ttl plus its grace (3 s), then it SIGKILLs cove-vmm through its pidfd and
# says why.  The ttl (15 s) leaves time to stop cove-vmm before its own
# deadline, however slow the emulated host boots.
source tests/integration/lib.sh
cove_env
start=$(date +%s.%N)
timeout -k 5 60 $cove run --cold --ttl 15 -- sh -c 'echo started; sleep 600' >"$WORK/out" 2>&1 &
runner=$!
wait_for "$WORK/out" started 30 || not_ok "the command did not start"
pid=$(cat "$COVE_RUNTIME_DIR"/*/meta.json 2>/dev/null | grep -o '"pid": *[0-9]*' | grep -o '[0-9]*$')
if [ -n "$pid" ] && kill -STOP "$pid"; then ok "cove-vmm $pid stopped with SIGSTOP at $(echo "$(date +%s.%N) - $start" | bc)s"; else
	not_ok "no cove-vmm to stop"; fi
wait $runner
rc=$?
secs=$(echo "$(date +%s.%N) - $start" | bc)
sed 's/^/  cove run: /' "$WORK/out"
echo "  cove run ended after ${secs}s with status $rc"
[ "$rc" != 0 ] && [ "$rc" != 124 ] && ok "non-zero status $rc" || not_ok "status $rc (124: timeout(1) had to end it)"
if grep -q "reached its --ttl of 15 s (cove-vmm did not stop by itself and was killed)" "$WORK/out"; then
	ok "the reason is given"; else not_ok "no ttl reason"; fi
if [ "$(echo "$secs <= 22 && $secs >= 15" | bc)" = 1 ]; then ok "ended after ${secs}s (bound 22 s: ttl 15 + grace 3 + reaping)"; else
	not_ok "took ${secs}s"; fi
if kill -0 "$pid" 2>/dev/null; then not_ok "cove-vmm $pid still exists"; kill -KILL "$pid"; else ok "cove-vmm is gone"; fi
finish
