#!/usr/bin/env bash
# On a /dev/kvm that runs Cove's guest (here: the emulated host's nested
# SVM), scripts/kvm-probe says "direct" and exits 0, and cove doctor's
# verdict is "sandboxes run directly", with the test guest passing; its
# --json form carries the same verdict.  A device node that is no KVM makes
# the probe fall back with a reason.
source tests/integration/lib.sh
need build/bin/cove
out=$(scripts/kvm-probe 2>&1)
rc=$?
if [ $rc = 0 ] && [ "$(echo "$out" | head -n1)" = direct ]; then ok "kvm-probe: direct"; else
	not_ok "kvm-probe: status $rc, '$out'"; fi
out=$(scripts/kvm-probe /dev/null 2>&1)
rc=$?
if [ $rc = 1 ] && [[ $out == *"cannot run a standard guest"*"using the emulated host"* ]]; then
	ok "kvm-probe /dev/null: $(echo "$out" | head -n1)"; else not_ok "kvm-probe /dev/null: status $rc, '$out'"; fi
out=$(build/bin/cove doctor 2>&1)
rc=$?
echo "$out" | sed 's/^/  /'
if [ $rc = 0 ] && [[ $out == *"verdict: sandboxes run directly"* ]] &&
	echo "$out" | grep -qE '^ok +kvm test guest'; then ok "doctor: sandboxes run directly"; else
	not_ok "doctor: status $rc"; fi
json=$(build/bin/cove doctor --json)
if python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["verdict"]=="direct" and d["kvm"]["probe"]=="works" and d["kvm"]["backend"] in ("nested","hardware") and any(c["name"]=="cgroup v2" for c in d["checks"])' "$json"; then
	ok "doctor --json: verdict direct"; else not_ok "doctor --json: $json"; fi
finish
