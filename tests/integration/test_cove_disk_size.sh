#!/usr/bin/env bash
# --disk-size 256M over the 64 MiB minimal image: the guest's / is grown
# at boot (df sees about 256 MiB; one console line says so), filling it
# gives ENOSPC in the guest, and the overlay file on the host stays under
# the cap libcove gave cove-vmm (max_file), itself within 1 MiB of the
# disk size.  A size smaller than the image is refused in one line.
source tests/integration/lib.sh
cove_env
out=$($cove run --cold --disk-size 16M -- true 2>&1)
rc=$?
if [ "$rc" != 0 ] && [[ $out == *"smaller than the image"* ]] && [ "$(echo "$out" | wc -l)" = 1 ]; then
	ok "a size below the image's is refused: $out"; else not_ok "status $rc: $out"; fi
$cove start --name dsz --disk-size 256M >/dev/null || { not_ok "start"; finish; }
total=$(gx dsz 'df -k / | tail -1' | awk '{print $2}')
echo "  df: / has $total KiB"
[ "$total" -gt $((230 * 1024)) ] 2>/dev/null && ok "the guest sees a grown / ($total KiB)" || not_ok "df total '$total' KiB"
grep -q "grew / on /dev/vda from 64 MiB to 256 MiB" "$COVE_RUNTIME_DIR/dsz/console.log" &&
	ok "the agent logged the resize" || not_ok "no resize line on the console"
out=$(gx dsz 'dd if=/dev/zero of=/root/big bs=1M count=400; echo "status $?"')
echo "$out" | tail -3 | sed 's/^/  guest: /'
if [[ $out == *"No space left on device"* ]] && [[ $out == *"status 1"* ]]; then
	ok "filling the disk fails with ENOSPC"; else not_ok "filling the disk: $out"; fi
written=$(gx dsz 'stat -c %s /root/big')
[ "$written" -gt $((200 * 1024 * 1024)) ] 2>/dev/null && ok "$written bytes written first" || not_ok "written '$written'"
gx dsz sync >/dev/null
pid=$($cove ls --json | python3 -c 'import json,sys; print([s["pid"] for s in json.load(sys.stdin) if s["name"]=="dsz"][0])')
cap=$(tr '\0' '\n' <"/proc/$pid/cmdline" | grep -o 'max_file=[0-9]*' | cut -d= -f2)
disk=$COVE_RUNTIME_DIR/dsz/root/disk0.qcow2
size=$(stat -c %s "$disk")
used=$(($(du -k "$disk" | cut -f1) * 1024))
echo "  overlay: $size bytes long, $used bytes used; cap $cap"
if [ -n "$cap" ] && [ "$cap" -le $((256 * 1024 * 1024 + 1024 * 1024)) ]; then ok "the cap is $cap bytes (256 MiB + $(((cap - 256 * 1024 * 1024) / 1024)) KiB)"; else
	not_ok "cap '$cap'"; fi
if [ -n "$cap" ] && [ "$size" -le "$cap" ] && [ "$used" -le "$cap" ]; then ok "the overlay file stays under its cap"; else
	not_ok "overlay $size/$used bytes, cap '$cap'"; fi
ls_size=$($cove ls --json | python3 -c 'import json,sys; print([s["disk_size"] for s in json.load(sys.stdin) if s["name"]=="dsz"][0])')
[ "$ls_size" = 268435456 ] && ok "cove ls --json shows disk_size" || not_ok "ls disk_size '$ls_size'"
finish
