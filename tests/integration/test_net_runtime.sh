#!/usr/bin/env bash
# cove net replaces a running sandbox's policy at once, with no restart; a
# bad rule changes nothing.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

$cove start --name rt --net none >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
gx rt 'echo $$ > /tmp/boot-shell; cat /proc/uptime' >"$WORK/up1"
fast_fail rt "closed at first" 'nc -w 30 198.51.100.90 9000 </dev/null | grep banner'
if $cove net rt --allow 198.51.100.90/32:9000 2>"$WORK/err"; then ok "cove net --allow"; else
	not_ok "cove net: $(cat "$WORK/err")"; fi
works rt "open after cove net" 'echo x | nc -w 10 198.51.100.90 9000' 'banner pin'
out=$($cove net rt --allow 300.1.1.1 2>&1)
if [ $? != 0 ]; then ok "a bad rule is refused: $out"; else not_ok "bad rule accepted"; fi
works rt "and the policy is unchanged" 'echo x | nc -w 10 198.51.100.90 9000' 'banner pin'
$cove net rt --net none 2>/dev/null
fast_fail rt "closed again after cove net --net none" 'nc -w 30 198.51.100.90 9000 </dev/null | grep banner'
up=$(gx rt 'cat /proc/uptime' | cut -d' ' -f1)
if awk -v a="$(cut -d' ' -f1 "$WORK/up1")" -v b="$up" 'BEGIN{exit !(b > a)}'; then
	ok "the same guest all along (uptime $up s)"; else not_ok "guest restarted"; fi
out=$($cove net nosuch --net open 2>&1)
[ $? != 0 ] && ok "cove net on an unknown sandbox: $out" || not_ok "cove net nosuch succeeded"
$cove start --name rt0 >/dev/null 2>&1
out=$($cove net rt0 --net open 2>&1)
[ $? != 0 ] && ok "cove net on a sandbox without networking: $out" || not_ok "cove net rt0 succeeded"
$cove stop rt rt0 >/dev/null
finish
