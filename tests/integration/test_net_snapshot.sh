#!/usr/bin/env bash
# Snapshots and forks of a sandbox with a network (stand-in cove-egress):
# the snapshot's note carries the policy and net limits; each fork gets
# its own index, link, cove-egress and a copy of the policy, or the one
# its own flags give; a snapshot without networking refuses --allow.
source tests/integration/lib.sh
source tests/integration/netlib.sh
fake_egress_env
rt=$COVE_RUNTIME_DIR
index() { meta "$1" | sed -n 's/.*"index":\([0-9]*\).*/\1/p'; }

$cove start --name src --allow 198.51.100.0/24:8000 --net-limit rx_bps=10000000 >/dev/null 2>"$WORK/err" ||
	not_ok "start src: $(cat "$WORK/err") $(tail -2 "$rt/src/vmm.log")"
$cove snapshot src "$WORK/snap" --stop >/dev/null 2>"$WORK/err" && ok "snapshot of a networked sandbox" ||
	not_ok "snapshot: $(cat "$WORK/err")"
grep -q '"198.51.100.0/24:8000"' "$WORK/snap/cove-sandbox.json" &&
	grep -q '"limits":"rx_bps=10000000"' "$WORK/snap/cove-sandbox.json" &&
	ok "the note carries the policy and the net limits" || not_ok "note: $(cat "$WORK/snap/cove-sandbox.json")"
[ -z "$(links)" ] && ok "snapshot --stop leaves no link" || not_ok "links after snapshot --stop: $(links)"

$cove fork "$WORK/snap" --count 2 --prefix f >/dev/null 2>"$WORK/err" && ok "fork --count 2" ||
	not_ok "fork: $(cat "$WORK/err") $(tail -2 "$rt/f-1/vmm.log" 2>/dev/null)"
k1=$(index f-1) k2=$(index f-2)
[ -n "$k1" ] && [ -n "$k2" ] && [ "$k1" != "$k2" ] && ip link show "cv$k1" >/dev/null 2>&1 &&
	ip link show "cv$k2" >/dev/null 2>&1 && ok "each fork has its own index and link ($k1, $k2)" ||
	not_ok "fork indexes '$k1' '$k2', links $(links)"
meta f-1 | grep -q '"198.51.100.0/24:8000"' && meta f-2 | grep -q '"198.51.100.0/24:8000"' &&
	ok "each fork has a copy of the policy" || not_ok "fork policy: $(meta f-1)"
for f in f-1 f-2; do
	vpid=$(meta "$f" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
	grep -q 'rx_bps=10000000' "/proc/$vpid/cmdline" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$vpid/cmdline" | grep -q -- '--net fd=3' && ok "$f: cove-vmm --restore --net fd=3 with the limits" ||
		not_ok "$f cmdline: $(tr '\0' ' ' <"/proc/$vpid/cmdline")"
done
mac=$($cove exec f-1 -- cat /sys/class/net/eth0/address 2>&1)
[ "$mac" = 06:00:ac:10:00:02 ] && ok "the fork's guest keeps eth0" || not_ok "fork eth0: '$mac'"
$cove net f-1 --net open 2>"$WORK/err" && meta f-1 | grep -q '"open"' && meta f-2 | grep -q '"rules"' &&
	ok "cove net on one fork leaves the other's policy" || not_ok "fork policies: $(cat "$WORK/err")"

$cove restore "$WORK/snap" --name r1 --net none >/dev/null 2>"$WORK/err" && meta r1 | grep -q '"mode":"none"' &&
	ok "restore --net none replaces the snapshot's policy" || not_ok "restore --net none: $(cat "$WORK/err")"
$cove stop f-1 f-2 r1
[ -z "$(links)" ] && [ -z "$(ls -A "$rt/.net" 2>/dev/null)" ] && ok "stopped forks leave no link or claim" ||
	not_ok "left: $(links) $(ls "$rt/.net")"

# A snapshot without a network cannot get one.
$cove start --name plain >/dev/null 2>&1
$cove snapshot plain "$WORK/snap2" --stop >/dev/null 2>&1
$cove restore "$WORK/snap2" --name r2 --allow 198.51.100.1 >/dev/null 2>"$WORK/err"
rc=$?
[ "$rc" = 1 ] && grep -q 'without networking' "$WORK/err" && [ ! -e "$rt/r2" ] &&
	ok "a snapshot without networking refuses --allow in one line" || not_ok "restore plain --allow: status $rc, $(cat "$WORK/err")"
$cove restore "$WORK/snap2" --name r3 >/dev/null 2>"$WORK/err" && ! grep -q '"net"' "$rt/r3/meta.json" &&
	ok "and restores without one" || not_ok "restore plain: $(cat "$WORK/err")"
$cove stop r3
finish
