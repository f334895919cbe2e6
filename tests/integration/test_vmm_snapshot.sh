#!/usr/bin/env bash
# Snapshots at the VMM level: a guest counting in a shell loop (state in
# memory, a file in tmpfs, writes to its qcow2 root disk) is snapshotted
# through the control API, keeps running, and is restored twice at once;
# each restore goes on counting from where the snapshot was.  The base image
# is never written; images pass qemu-img check; corrupted snapshots are
# refused with a reason before any guest runs.
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4
command -v qemu-img >/dev/null || { echo "skip: no qemu-img"; exit 77; }
k=$(stage vmlinux build/vmlinux)
base=$(stage base.ext4 build/images/minimal.ext4)
chmod 0444 "$base"
base_sum=$(sha256sum <"$base")
qemu-img create -q -f qcow2 -F raw -b "$base" "$WORK/top.qcow2"

con=$WORK/con.log
"$VMM" --kernel "$k" --memory 128 --disk "$WORK/top.qcow2,format=qcow2" --api "$WORK/api.sock" \
	--console "$con" --cmdline "$(guest_cmd '
	echo in-tmpfs > /tmp/marker; i=0
	while :; do i=$((i+1)); echo "tick $i $(cat /tmp/marker)"; echo $i >> /root/ticks; sleep 1; done')" \
	>"$WORK/vmm.err" 2>&1 &
pid=$!
if wait_for "$con" '^tick 3 in-tmpfs'; then ok "guest counts"; else
	not_ok "guest did not start counting"; tail -n 20 "$con" "$WORK/vmm.err"; kill $pid; finish; fi

stats=$(vmm_api "$WORK/api.sock" '{"op":"stats"}')
if python3 -c 'import json,sys; s=json.loads(sys.argv[1]); assert s["kvm"]["exits"] > 0 and s["kvm"]["io_exits"] > 0 and s["vmm_rss_kb"] > 0 and s["disk_read_bytes"] > 0' "$stats"; then
	ok "stats: KVM exit counts, VMM memory, disk bytes"; else not_ok "stats: $stats"; fi

snap=$WORK/snap
reply=$(vmm_api "$WORK/api.sock" "{\"op\":\"snapshot\",\"dir\":\"$snap\",\"then\":\"resume\"}")
echo "snapshot reply: $reply"
at=$(grep -o '^tick [0-9]*' "$con" | tail -n1 | cut -d' ' -f2)
if [[ $reply == *'"ok":true'* ]] && [ -f "$snap/state" ] && [ -f "$snap/memory" ] &&
	[ -f "$snap/disk0.qcow2" ]; then ok "snapshot written (state, memory, disk0.qcow2)"; else
	not_ok "snapshot: $reply"; ls -la "$snap"; fi
mem_alloc=$(du -B1 "$snap/memory" | cut -f1)
mem_size=$(stat -c %s "$snap/memory")
echo "memory file: $mem_alloc bytes allocated of $mem_size"
if [ "$mem_alloc" -lt "$mem_size" ]; then ok "memory file is sparse"; else not_ok "memory file not sparse"; fi
if [ ! -w "$snap/disk0.qcow2" ] || [ "$(stat -c %a "$snap/disk0.qcow2")" = 400 ]; then
	ok "frozen disk is read-only"; else not_ok "frozen disk mode $(stat -c %a "$snap/disk0.qcow2")"; fi
if qemu-img info --backing-chain "$WORK/top.qcow2" 2>&1 | grep -q "$snap/disk0.qcow2"; then
	ok "the running VM continues on a fresh overlay over the frozen disk"; else
	not_ok "backing chain: $(qemu-img info --backing-chain "$WORK/top.qcow2" 2>&1)"; fi
after=$((at + 2))
if wait_for "$con" "^tick $after in-tmpfs" 60; then ok "the snapshotted VM keeps running"; else
	not_ok "original stalled after the snapshot"; tail -n 5 "$con"; fi
reply=$(vmm_api "$WORK/api.sock" '{"op":"stop"}')
wait $pid
echo "original stopped: $reply, status $?"

# Two restores at once.
pids=()
for f in 1 2; do
	mkdir -p "$WORK/fork$f"
	"$VMM" --restore "$snap" --overlay-dir "$WORK/fork$f" --console "$WORK/fork$f.log" \
		--api "$WORK/fork$f/api.sock" >"$WORK/fork$f.err" 2>&1 &
	pids+=($!)
done
for f in 1 2; do
	if wait_for "$WORK/fork$f.log" "^tick $((at + 2)) in-tmpfs" 60; then
		first=$(grep -o '^tick [0-9]*' "$WORK/fork$f.log" | head -n1 | cut -d' ' -f2)
		if [ "$first" -gt 1 ]; then ok "fork $f resumed counting at tick $first (snapshot near $at)"; else
			not_ok "fork $f restarted from tick $first"; fi
	else
		not_ok "fork $f did not resume"; tail -n 10 "$WORK/fork$f.log" "$WORK/fork$f.err"
	fi
done
for f in 1 2; do vmm_api "$WORK/fork$f/api.sock" '{"op":"stop"}' >/dev/null; done
wait "${pids[@]}"
for img in "$snap/disk0.qcow2" "$WORK/top.qcow2" "$WORK/fork1/disk0.qcow2" "$WORK/fork2/disk0.qcow2"; do
	if qemu-img check -q "$img"; then ok "qemu-img check clean: ${img#$WORK/}"; else
		not_ok "qemu-img check: $img"; fi
done
if [ "$(sha256sum <"$base")" = "$base_sum" ]; then ok "base image unchanged"; else not_ok "base image was written"; fi

# Corrupted snapshots are refused before any guest runs.
refuse() { # refuse NAME EXPECTED-WORDS SETUP
	local d=$WORK/bad-$1
	cp -a "$snap" "$d"
	chmod u+w "$d" "$d"/*
	eval "$3"
	mkdir -p "$d.o"
	local err
	err=$(timeout 60 "$VMM" --restore "$d" --overlay-dir "$d.o" --console none 2>&1 >/dev/null)
	local rc=$?
	if [ $rc = 1 ] && [[ $err == *"$2"* ]] && [ "$(echo "$err" | wc -l)" = 1 ]; then
		ok "refused $1: $err"; else not_ok "$1: status $rc, '$err'"; fi
}
refuse truncated "truncated" 'truncate -s 100 "$d/state"'
refuse magic "wrong magic" 'printf XXXX | dd of="$d/state" conv=notrunc status=none'
refuse version "version 7 is not supported" 'python3 -c "
import sys, zlib, struct
p = sys.argv[1]; b = bytearray(open(p, \"rb\").read())
b[8:12] = struct.pack(\"<I\", 7); b[28:32] = struct.pack(\"<I\", zlib.crc32(bytes(b[:28])))
open(p, \"wb\").write(b)" "$d/state"'
refuse crc "checksum" 'printf "\xff" | dd of="$d/state" bs=1 seek=200 conv=notrunc status=none'
refuse memory "memory file is" 'truncate -s 1M "$d/memory"'
refuse nomemory "no memory file" 'rm "$d/memory"'
# Well-formed snapshots that do not fit this host.
refuse cpu "CPU has features this host lacks" 'snap_patch "$d/state" VCPU "
import struct
n = 128
base = len(d) - n * 40
for i in range(n):
    o = base + i * 40
    fn, idx = struct.unpack_from(\"<II\", d, o)
    if fn == 7 and idx == 0:
        struct.pack_into(\"<I\", d, o + 16, 0xffffffff)
"'
refuse hostmem "does not fit this host" 'snap_patch "$d/state" CONF "
import struct
struct.pack_into(\"<Q\", d, 8, 512 << 30)
"; truncate -s 512G "$d/memory"'
finish
