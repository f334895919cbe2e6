#!/usr/bin/env bash
# cove-vmm boots minimal.ext4 with vmlinux (PVH) and with bzImage (64-bit
# boot protocol); init runs a command, reboots, and cove-vmm exits 0.
source tests/integration/lib.sh
need build/vmlinux build/bzImage build/images/minimal.ext4
vmlinux=$(stage vmlinux build/vmlinux)
bzimage=$(stage bzImage build/bzImage)
img=$(stage root.ext4 build/images/minimal.ext4)

for k in "$vmlinux" "$bzimage"; do
	name=$(basename "$k")
	out=$WORK/$name.out
	vmm "$out" --kernel "$k" --disk "$img" --cmdline "$(guest_cmd 'echo hello-from-$(uname -s)')"
	rc=$?
	if [ $rc = 0 ] && grep -q 'COVE-INIT-OK' "$out" && grep -q 'hello-from-Linux' "$out" &&
		grep -q 'COVE-CMD-EXIT 0' "$out"; then
		ok "boot $name: init ran the command, exit 0"
	else
		not_ok "boot $name (status $rc)"
		tail -n 20 "$out"
	fi
	if grep -q 'boot-timer: guest init after' "$out"; then
		ok "boot $name: boot timer fired ($(grep -o 'after [0-9]* us' "$out"))"
	else
		not_ok "boot $name: no boot-timer line"
	fi
done
finish
