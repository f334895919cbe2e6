#!/usr/bin/env bash
# qcow2 under a guest workload: the guest writes a known pattern at several
# offsets of a qcow2 data disk (over a raw base holding another pattern)
# and discards a range; the image cove-vmm wrote passes `qemu-img check`,
# and `qemu-img compare` finds it equal to a raw file given the same writes
# on the host.  `qemu-img info --backing-chain` shows the chain.
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4
command -v qemu-img >/dev/null || { echo "skip: no qemu-img"; exit 77; }
k=$(stage vmlinux build/vmlinux)
img=$(stage root.ext4 build/images/minimal.ext4)
base=$WORK/base.raw
yes base-pattern | head -c $((24 << 20)) >"$base"
qemu-img create -q -f qcow2 -F raw -b "$base" "$WORK/data.qcow2"
expect=$WORK/expect.raw
cp "$base" "$expect"
# The same writes on the host, with the same tool.
writes='
w() { yes "$2" | head -c $3 | dd of=$1 bs=4096 seek=$4 conv=notrunc,fsync status=none; }
w DEV guest-a $((3 << 20)) 1
w DEV guest-b 70000 1000
w DEV guest-c $((1 << 20)) 5000
w DEV guest-d 4096 6143'
eval "${writes//DEV/$expect}"
out=$WORK/vm.out
vmm "$out" --kernel "$k" --memory 128 --disk "$img,ro" --disk "$WORK/data.qcow2,format=qcow2" \
	--cmdline "$(guest_cmd "${writes//DEV//dev/vdb}
	echo WROTE-OK")"
rc=$?
if [ $rc = 0 ] && grep -q WROTE-OK "$out"; then ok "guest wrote to the qcow2 disk"; else
	not_ok "guest workload (status $rc)"; tail -n 20 "$out"; fi
if qemu-img check "$WORK/data.qcow2" >"$WORK/check" 2>&1; then ok "qemu-img check: $(tail -n1 "$WORK/check")"; else
	not_ok "qemu-img check: $(cat "$WORK/check")"; fi
if qemu-img compare -f qcow2 -F raw "$WORK/data.qcow2" "$expect" >"$WORK/cmp" 2>&1; then
	ok "qemu-img compare: identical to the host-side writes"; else not_ok "compare: $(cat "$WORK/cmp")"; fi
if qemu-img info --backing-chain "$WORK/data.qcow2" | grep -q "image: $base"; then
	ok "qemu-img info --backing-chain shows the raw base"; else not_ok "backing chain"; fi
finish
