#!/usr/bin/env bash
# A guest that fills its root disk (a qcow2 overlay over the 64 MiB minimal
# image) gets ENOSPC from write(2), never EIO: the block device serves
# every write up to the file system's end and reports no I/O error; a
# second file is refused the same way; space freed is usable again; the
# overlay stays consistent (qemu-img check).  busybox head reports a failed
# write as "standard output: I/O error" whatever the errno (its
# die_if_ferror prints a fixed string), so the test writes with dd and cat,
# which print strerror(errno).
# Then a restored sandbox with a small memory and a larger disk writes more
# than its memory: its overlay on the runtime tmpfs is charged to its
# cgroup, whose memory.max makes room for the overlay's cap (no OOM kill).
source tests/integration/lib.sh
cove_env

$cove start --name full >/dev/null || { not_ok "start"; finish; }
out=$(gx full 'dd if=/dev/urandom of=/root/big bs=1M count=200; echo "status $?"')
echo "$out" | sed 's/^/  guest: /'
if [[ $out == *"No space left on device"* ]] && [[ $out == *"status 1"* ]]; then
	ok "filling the disk fails with ENOSPC"; else not_ok "filling the disk: $out"; fi
size=$(gx full 'stat -c %s /root/big')
if [ "$size" -gt $((40 * 1024 * 1024)) ] 2>/dev/null; then ok "$size bytes written before the disk was full"; else
	not_ok "only '$size' bytes written"; fi
out=$(gx full 'cat /dev/zero > /root/second; echo "status $?"')
if [[ $out == *"No space left on device"* ]]; then ok "a second file gets ENOSPC too"; else
	not_ok "second file: $out"; fi
errs=$(gx full 'dmesg | grep -ciE "I/O error|EXT4-fs error|buffer_io_error"')
if [ "$errs" = 0 ]; then ok "the guest kernel logged no I/O error"; else
	not_ok "guest kernel I/O errors: $(gx full 'dmesg | grep -iE "I/O error|EXT4-fs error" | head -3')"; fi
out=$(gx full 'rm /root/big /root/second; sync; dd if=/dev/zero of=/root/after bs=1M count=8 2>&1 && sync && echo wrote-again')
if [[ $out == *wrote-again* ]]; then ok "freed space is usable again"; else not_ok "after freeing: $out"; fi
disk=$COVE_RUNTIME_DIR/full/root/disk0.qcow2
if ! command -v qemu-img >/dev/null; then
	echo "skip: qemu-img missing"
elif [ -f "$disk" ] && qemu-img check -U -q "$disk"; then
	ok "the overlay passes qemu-img check ($(du -k "$disk" | cut -f1) KiB)"; else
	not_ok "qemu-img check of $disk"; fi
$cove stop full >/dev/null 2>&1

# A restore (cove run restores the image's base template) with 64 MiB of
# RAM writes 160 MiB to its disk and lives on to print its status.
out=$(timeout -k 5 300 $cove run --memory 64 --disk-size 512M -- sh -c \
	'dd if=/dev/urandom of=/root/big bs=1M count=160 2>/dev/null && sync; echo "status $? size $(stat -c %s /root/big)"' 2>"$WORK/run.err")
if [ "$out" = "status 0 size $((160 << 20))" ]; then
	ok "a restored 64 MiB sandbox wrote and synced 160 MiB to its tmpfs overlay"
else
	not_ok "restored sandbox writing 160 MiB: '$out', $(tail -n 2 "$WORK/run.err"); $(dmesg | grep -i 'killed process' | tail -n 1)"
fi
finish
