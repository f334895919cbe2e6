#!/bin/bash
# smoke.sh: run inside the emulated arm64 KVM host (issue 35, docs/arm64.md):
#   make ARCH=arm64
#   flock /work/kvm.lock scripts/kvm-host --arch arm64 --timeout 600 -- tests/arm64/smoke.sh
# Checks that the host is aarch64, that /dev/kvm exists and the kernel says
# KVM came up, then runs kvm_smoke (a VM, a vCPU, PC set with
# KVM_SET_ONE_REG, two MMIO exits and PSCI's SYSTEM_OFF), vcpu_smoke
# (vmm/arch/arm64's vCPU and vGIC set-up and boot registers) and
# boot_smoke: Debian's arm64 kernel booted with 2 vCPUs on the device tree
# of fdt.c (build/arm64/guest.dtb) and an initramfs whose init
# (guest-init) reports what the kernel made of the tree and powers off
# through PSCI; the console must show the tree's model, command line, PSCI,
# the GICv3's redistributors, the timer, the second CPU, the UART, the
# memory, the initrd, the rng-seed taken and both virtio-mmio nodes probed.
# Exit status 0 when all hold, 1 naming the first that does not.
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

# boot_smoke: the console into a file, then the lines it must hold.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$bin/boot_smoke" "$bin/host-Image" "$bin/guest.dtb" 256 2 300 "$bin/guest-initrd.cpio.gz" >"$log" 2>&1 || {
	tail -n 20 "$log" >&2
	fail "boot_smoke failed"
}
while IFS= read -r want; do
	line=$(grep -F -m1 -- "$want" "$log") || { tail -n 20 "$log" >&2; fail "the guest's console lacks '$want'"; }
	echo "smoke: guest: ${line#\[*\] }"
done <<'LINES'
Machine model: Cove microVM
Kernel command line: console=ttyS0 earlycon=uart8250,mmio,0x9000000 panic=-1
psci: PSCIv
GICv3: CPU0: found redistributor 0 region 0:0x00000000080a0000
GICv3: CPU1: found redistributor 1 region 0:0x00000000080c0000
arch_timer: cp15 timer(s) running
smp: Brought up 1 node, 2 CPUs
9000000.uart: ttyS0 at MMIO 0x9000000
dt: model Cove microVM
dt: cpus in the tree 2, online 0-1
dt: memory reg 00000000800000000000000010000000
dt: initrd 00000000
dt: rng-seed consumed
dt: virtio nodes virtio_mmio@a000000 virtio_mmio@a001000
virtio-mmio a000000.virtio_mmio: Wrong magic value 0x00000000!
virtio-mmio a001000.virtio_mmio: Wrong magic value 0x00000000!
dt: virtio platform devices 2
dt: done
boot_smoke: PSCI SYSTEM_OFF
LINES
echo "smoke: ok"
