#!/usr/bin/env bash
# --ttl is enforced on the host: `cove run --ttl 5` of a guest that spins
# for ever ends by 8 s (counted from the start of cove run, boot
# included), with a non-zero status and the reason on stderr.
source tests/integration/lib.sh
cove_env
start=$(date +%s.%N)
out=$(timeout -k 5 60 $cove run --cold --ttl 5 -- sh -c 'echo started; while :; do :; done' 2>&1)
rc=$?
secs=$(echo "$(date +%s.%N) - $start" | bc)
echo "$out" | sed 's/^/  cove run: /'
echo "  cove run ended after ${secs}s with status $rc"
[[ $out == *started* ]] && ok "the command ran (busy) before the deadline" || not_ok "the command never started"
[ "$rc" != 0 ] && [ "$rc" != 124 ] && ok "non-zero status $rc" || not_ok "status $rc"
if [[ $out == *"the sandbox reached its --ttl of 5 s"* ]]; then ok "the reason is given"; else
	not_ok "no ttl reason in: $out"; fi
if [ "$(echo "$secs <= 8" | bc)" = 1 ]; then ok "stopped after ${secs}s (bound 8 s)"; else
	not_ok "took ${secs}s (bound 8 s)"; fi
left=$(ls "$COVE_RUNTIME_DIR" 2>/dev/null | wc -l)
[ "$left" = 0 ] && ok "no sandbox entry left" || not_ok "$left entries left in the registry"
finish
