#!/usr/bin/env bash
# Snapshots to a directory on another file system than the runtime dir
# (here: runtime dir on /run, snapshot under /tmp, two tmpfs mounts, as on
# real hosts where /run is tmpfs and snapshots go to disk).  The frozen
# disk cannot be renamed there, so it is copied; the snapshot must restore
# and fork with the disk's content, and the running sandbox goes on.
source tests/integration/lib.sh
cove_env "$(mktemp -d /run/cove-xfs.XXXXXX)"

snap=$WORK/snap
if [ "$(stat -c %d "$COVE_RUNTIME_DIR")" = "$(stat -c %d "$WORK")" ]; then
	echo "skip: $COVE_RUNTIME_DIR and $WORK share a file system here"
	exit 77
fi
$cove start --name a >/dev/null || { not_ok "start"; finish; }
gx a 'echo on-disk > /root/kept; sync' >/dev/null
if $cove snapshot a "$snap" 2>"$WORK/err"; then
	ok "snapshot from $(df --output=target "$COVE_RUNTIME_DIR" | tail -1) to $(df --output=target "$WORK" | tail -1)"
else
	not_ok "snapshot across file systems: $(cat "$WORK/err")"
	finish
fi
if [ -f "$snap/state" ] && [ -f "$snap/disk0.qcow2" ] && [ "$(stat -c %a "$snap/disk0.qcow2")" = 400 ] &&
	! qemu-img info -U "$COVE_RUNTIME_DIR/a/root/disk0.qcow2" | grep -qF "backing file: $snap"; then
	ok "the frozen disk was copied into the snapshot (read-only); the sandbox keeps its own disk"; else
	not_ok "snapshot contents: $(ls -l "$snap" | tr '\n' ' ')"; fi
if command -v qemu-img >/dev/null && qemu-img check -q "$snap/disk0.qcow2"; then
	ok "the copied disk passes qemu-img check"; fi
if [ "$(gx a 'cat /root/kept; echo more >> /root/kept; sync; cat /root/kept' | tr '\n' ' ')" = "on-disk on-disk more " ]; then
	ok "the original goes on writing its disk"; else not_ok "original after snapshot"; fi
$cove stop a >/dev/null
if $cove fork "$snap" --count 2 --prefix b >/dev/null 2>"$WORK/err"; then
	got1=$(gx b-1 'cat /root/kept') got2=$(gx b-2 'cat /root/kept')
	if [ "$got1" = on-disk ] && [ "$got2" = on-disk ]; then ok "forks see the disk as snapshotted"; else
		not_ok "forks read '$got1' '$got2'"; fi
else
	not_ok "fork from the copied snapshot: $(cat "$WORK/err")"
fi
finish
