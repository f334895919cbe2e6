#!/usr/bin/env bash
# A shipped snapshot whose state file names /etc/shadow as a disk (CRCs
# valid) is refused on restore, in one line naming the path, before any
# guest runs.
source tests/integration/lib.sh
cove_env
$cove start --name s >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
snap=$WORK/snap
$cove snapshot s "$snap" --stop 2>"$WORK/err" || { not_ok "snapshot: $(cat "$WORK/err")"; finish; }
chmod u+w "$snap/state"
# snap_conf: 32 bytes, then disks[0]: file[4096], id[24], format[8],
# read_only, in_snapshot.
snap_patch "$snap/state" CONF '
import struct
f = b"/etc/shadow"
d[32:32 + 4096] = f + b"\0" * (4096 - len(f))
struct.pack_into("<I", d, 32 + 4132, 0)
'
err=$(timeout 120 $cove restore "$snap" --name r 2>&1 >/dev/null)
rc=$?
if [ $rc != 0 ] && [ "$(echo "$err" | wc -l)" = 1 ] && [[ $err == *"/etc/shadow"* ]] &&
	[[ $err == *"outside the snapshot"* ]]; then ok "refused (status $rc): $err"; else
	not_ok "status $rc: '$err'"; fi
[ ! -e "$COVE_RUNTIME_DIR/r" ] && ok "no sandbox left behind" || not_ok "r left behind"
finish
