#!/usr/bin/env bash
# Disks: data written survives a second boot and e2fsck is clean after;
# a read-only disk cannot be written; several disks per VM.
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4
k=$(stage vmlinux build/vmlinux)
img=$(stage root.ext4 build/images/minimal.ext4)
data=$WORK/data.img
truncate -s 64M "$data"
mkfs.ext4 -q -F "$data"

out=$WORK/write.out
vmm "$out" --kernel "$k" --disk "$img" --disk "$data" --cmdline "$(guest_cmd '
	mkdir -p /mnt/d && mount /dev/vdb /mnt/d &&
	dd if=/dev/urandom of=/mnt/d/blob bs=1M count=8 2>/dev/null &&
	sha256sum /mnt/d/blob | cut -c1-64 > /mnt/d/blob.sum && cat /mnt/d/blob.sum &&
	echo root-write > /root/marker && sync && umount /mnt/d && echo WROTE-OK')"
rc=$?
sum1=$(grep -o '^[0-9a-f]\{64\}' "$out" | head -n1)
if [ $rc = 0 ] && grep -q WROTE-OK "$out" && [ -n "$sum1" ]; then ok "wrote 8 MiB to a second disk"; else
	not_ok "write boot (status $rc)"
	tail -n 20 "$out"
fi

out=$WORK/read.out
vmm "$out" --kernel "$k" --disk "$img" --disk "$data,id=data-disk" --cmdline "$(guest_cmd '
	mkdir -p /mnt/d && mount -o ro /dev/vdb /mnt/d && echo SUM=$(sha256sum /mnt/d/blob | cut -c1-64) &&
	echo ROOT=$(cat /root/marker) && echo SERIAL=$(cat /sys/block/vdb/serial 2>/dev/null)')"
rc=$?
sum2=$(sed -n 's/.*SUM=\([0-9a-f]*\).*/\1/p' "$out" | head -n1)
if [ $rc = 0 ] && [ -n "$sum1" ] && [ "$sum1" = "$sum2" ]; then ok "data survives a second boot"; else
	not_ok "data after reboot: '$sum2' vs '$sum1'"
	tail -n 20 "$out"
fi
if grep -q 'ROOT=root-write' "$out"; then ok "root disk writes persist"; else not_ok "root disk marker lost"; fi
if grep -q 'SERIAL=data-disk' "$out"; then ok "GET_ID gives the disk id"; else not_ok "disk serial: $(grep SERIAL= "$out")"; fi
if e2fsck -fn "$data" >/dev/null 2>&1 && e2fsck -fn "$img" >/dev/null 2>&1; then
	ok "e2fsck clean on both images"
else
	not_ok "e2fsck found problems"
	e2fsck -fn "$data" | tail -n 5
fi

before=$(sha256sum "$data" | cut -c1-64)
out=$WORK/ro.out
vmm "$out" --kernel "$k" --disk "$img" --disk "$data,ro" --cmdline "$(guest_cmd '
	echo RO=$(cat /sys/block/vdb/ro);
	dd if=/dev/zero of=/dev/vdb bs=4096 count=1 oflag=direct 2>&1 | tail -n1;
	echo DD-DONE')"
rc=$?
after=$(sha256sum "$data" | cut -c1-64)
if [ $rc = 0 ] && grep -q 'RO=1' "$out" && [ "$before" = "$after" ]; then
	ok "read-only disk: guest sees ro=1 and the image is unchanged"
else
	not_ok "read-only disk (status $rc)"
	tail -n 20 "$out"
fi
# Discard punches a hole (the host file reads zeros there); write-zeroes
# zeroes a range; both on a scratch disk full of 0xff.
scratch=$WORK/scratch.img
head -c $((4 << 20)) /dev/zero | tr '\0' '\377' >"$scratch"
out=$WORK/discard.out
fresh=$(stage fresh.ext4 build/images/minimal.ext4)
vmm "$out" --kernel "$k" --disk "$fresh,ro" --disk "$scratch" --cmdline "$(guest_cmd '
	blkdiscard -o 0 -l 1048576 /dev/vdb && echo DISCARD-OK;
	echo MAXZ=$(cat /sys/block/vdb/queue/write_zeroes_max_bytes)')"
rc=$?
first=$(head -c 1048576 "$scratch" | tr -d '\0' | wc -c)
rest=$(tail -c +1048577 "$scratch" | tr -d '\377' | wc -c)
if [ $rc = 0 ] && grep -q DISCARD-OK "$out" && [ "$first" = 0 ] && [ "$rest" = 0 ]; then
	ok "discard of the first MiB leaves zeros there and the rest intact"
else
	not_ok "discard (status $rc, $first non-zero bytes in the range, $rest changed after it)"
	tail -n 5 "$out"
fi
if grep -q 'MAXZ=[1-9]' "$out"; then ok "write-zeroes offered ($(grep -o 'MAXZ=[0-9]*' "$out"))"; else not_ok "no write-zeroes"; fi
finish
