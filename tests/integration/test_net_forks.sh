#!/usr/bin/env bash
# Snapshots and forks: each restore or fork gets its own namespace, TAP,
# resolver, proxy and a copy of the policy; two forks of one snapshot get
# separate policies; the guest's network comes back up with the same
# address; a connection open at the snapshot fails cleanly.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

$cove start --name fb --allow 198.51.100.90/32:9000 >/dev/null 2>"$WORK/err" || {
	not_ok "start: $(cat "$WORK/err")"; finish; }
works fb "the base reaches 9000" 'echo x | nc -w 10 198.51.100.90 9000' 'banner pin'
# A connection that stays open across the snapshot (it sends a line a second).
gx fb '((while sleep 1; do echo tick; done) | nc 198.51.100.90 9000 > /tmp/held 2>&1; echo "nc ended $?" >> /tmp/held) >/dev/null 2>&1 </dev/null &' >/dev/null
sleep 2
$cove snapshot fb "$WORK/snap" --stop 2>"$WORK/err" || { not_ok "snapshot: $(cat "$WORK/err")"; finish; }
$cove restore "$WORK/snap" --name fr >/dev/null 2>"$WORK/err" || { not_ok "restore: $(cat "$WORK/err")"; finish; }
works fr "the restored sandbox keeps its policy" 'echo x | nc -w 10 198.51.100.90 9000' 'banner pin'
works fr "and its address" 'ip -4 addr show eth0' '172\.16\.0\.2/30'
$cove stop fr >/dev/null
$cove fork "$WORK/snap" --count 1 --prefix fa >/dev/null 2>"$WORK/err" || { not_ok "fork a: $(cat "$WORK/err")"; finish; }
$cove fork "$WORK/snap" --count 1 --prefix fz --net none >/dev/null 2>"$WORK/err" || { not_ok "fork z: $(cat "$WORK/err")"; finish; }
works fa-1 "fork a (the snapshot's policy) reaches 9000" 'echo x | nc -w 10 198.51.100.90 9000' 'banner pin'
fast_fail fz-1 "fork z (--net none) does not" 'nc -w 30 198.51.100.90 9000 </dev/null | grep banner'
$cove net fz-1 --allow 198.51.100.80/32:80 2>/dev/null
works fz-1 "cove net on fork z opens 80 there" 'timeout 30 wget -q -O- http://198.51.100.80/' '^fake:'
fast_fail fa-1 "but not on fork a" 'timeout 30 wget -q -O- http://198.51.100.80/'
out=$(gx fa-1 'for i in $(seq 30); do grep -q "nc ended" /tmp/held && break; sleep 1; done; cat /tmp/held')
if grep -q 'nc ended' <<<"$out"; then ok "the connection open at the snapshot ended ($(tr '\n' ' ' <<<"$out"))"; else
	not_ok "held connection: $out"; fi
$cove stop fa-1 fz-1 >/dev/null
finish
