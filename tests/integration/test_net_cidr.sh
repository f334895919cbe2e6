#!/usr/bin/env bash
# CIDR rules: --allow CIDR:PORT opens exactly that address range and port
# (TCP and UDP), nothing next to it; a --deny inside an allow wins.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

$cove start --name nc1 --allow 198.51.100.90/32:9000 --allow 198.51.100.91:9001 >/dev/null 2>"$WORK/err" || {
	not_ok "start --allow: $(cat "$WORK/err")"; finish; }
works nc1 "198.51.100.90:9000 is open" 'echo hi | nc -w 10 198.51.100.90 9000' 'banner pin'
fast_fail nc1 "198.51.100.80:80 is not" 'timeout 30 wget -q -O- http://198.51.100.80/'
fast_fail nc1 "198.51.100.90:9001 is not" 'nc -w 30 198.51.100.90 9001 </dev/null | grep .'
udp_before=$(conn_count udp9001)
gx nc1 'tftp -g -r probe -l /tmp/p 198.51.100.91 9001' >/dev/null
sleep 1
if [ "$(conn_count udp9001)" -gt "$udp_before" ]; then ok "UDP to 198.51.100.91:9001 is open"; else
	not_ok "the UDP echo saw nothing"; fi
$cove stop nc1 >/dev/null

$cove start --name nc2 --allow 198.51.100.0/24:9000-9001 --deny 198.51.100.90/32 >/dev/null 2>"$WORK/err" || {
	not_ok "start --allow --deny: $(cat "$WORK/err")"; finish; }
fast_fail nc2 "--deny 198.51.100.90/32 beats --allow 198.51.100.0/24:9000-9001" \
	'nc -w 30 198.51.100.90 9000 </dev/null | grep banner'
$cove stop nc2 >/dev/null

for bad in "--allow 198.51.100.0/33" "--allow 1.2.3.4:0" "--allow 1.2.3.4:9-2" "--deny allowed.test" "--net maybe"; do
	out=$($cove run $bad -- true 2>&1)
	if [ $? != 0 ] && [ "$(wc -l <<<"$out")" = 1 ]; then ok "'$bad' refused: $out"; else
		not_ok "'$bad': $out"; fi
done
finish
