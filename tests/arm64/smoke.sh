#!/bin/bash
# smoke.sh: run inside the emulated arm64 KVM host (issue 35, docs/arm64.md):
#   make build/arm64/kvm_smoke
#   flock /work/kvm.lock scripts/kvm-host --arch arm64 --timeout 600 -- tests/arm64/smoke.sh
# Checks that the host is aarch64, that /dev/kvm exists and the kernel says
# KVM came up, then runs kvm_smoke (a VM, a vCPU, PC set with
# KVM_SET_ONE_REG, two MMIO exits and PSCI's SYSTEM_OFF).  Exit status 0
# when all hold, 1 naming the first that does not.
set -u
fail() { echo "smoke: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
smoke=${KVM_SMOKE:-$here/../../build/arm64/kvm_smoke}

echo "smoke: kernel $(uname -r) on $(uname -m), up $(cut -d' ' -f1 /proc/uptime) s when the job started"
[ "$(uname -m)" = aarch64 ] || fail "this is $(uname -m), not aarch64"
[ -c /dev/kvm ] || fail "/dev/kvm is missing"
line=$(dmesg | grep -E 'kvm \[[0-9]+\]: (VHE mode|Hyp mode|Protected nVHE mode) initialized successfully') ||
	fail "dmesg does not say KVM initialised: $(dmesg | grep -i kvm | tail -n 3 | tr '\n' ' ')"
echo "smoke: dmesg: ${line#*] }"
[ -x "$smoke" ] || fail "$smoke is missing (make build/arm64/kvm_smoke)"
"$smoke" || fail "kvm_smoke failed"
echo "smoke: ok"
