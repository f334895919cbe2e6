#!/bin/bash
# smoke.sh: run inside the emulated arm64 KVM host (issue 35, docs/arm64.md):
#   make ARCH=arm64
#   flock /work/kvm.lock scripts/kvm-host --arch arm64 --timeout 600 -- tests/arm64/smoke.sh
# Checks that the host is aarch64, that /dev/kvm exists and the kernel says
# KVM came up, then runs kvm_smoke (a VM, a vCPU, PC set with
# KVM_SET_ONE_REG, two MMIO exits and PSCI's SYSTEM_OFF) and vcpu_smoke
# (vmm/arch/arm64's vCPU and vGIC set-up and boot registers).  Exit status
# 0 when all hold, 1 naming the first that does not.
set -u
fail() { echo "smoke: $*" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/../../build/arm64

echo "smoke: kernel $(uname -r) on $(uname -m), up $(cut -d' ' -f1 /proc/uptime) s when the job started"
[ "$(uname -m)" = aarch64 ] || fail "this is $(uname -m), not aarch64"
[ -c /dev/kvm ] || fail "/dev/kvm is missing"
line=$(dmesg | grep -E 'kvm \[[0-9]+\]: (VHE mode|Hyp mode|Protected nVHE mode) initialized successfully') ||
	fail "dmesg does not say KVM initialised: $(dmesg | grep -i kvm | tail -n 3 | tr '\n' ' ')"
echo "smoke: dmesg: ${line#*] }"
for t in kvm_smoke vcpu_smoke; do
	[ -x "$bin/$t" ] || fail "build/arm64/$t is missing (make ARCH=arm64)"
	"$bin/$t" || fail "$t failed"
done
echo "smoke: ok"
