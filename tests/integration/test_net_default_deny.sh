#!/usr/bin/env bash
# Default deny: a sandbox without network flags has no NIC at all; one
# started with --net none has eth0 and its resolver, but TCP, UDP and DNS to
# every server of the fake internet fail fast, and nothing reaches them.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

out=$($cove run -- sh -c 'ls /sys/class/net' 2>&1)
if ! grep -q eth0 <<<"$out"; then ok "no network flags: no NIC ($(echo $out))"; else
	not_ok "no network flags, yet: $out"; fi

$cove start --name nd --net none >/dev/null 2>"$WORK/err" || {
	not_ok "start --net none: $(cat "$WORK/err")"; finish; }
works nd "eth0 is 172.16.0.2/30" 'ip -4 addr show eth0' 'inet 172\.16\.0\.2/30'
works nd "resolv.conf names only the sandbox's resolver" 'grep -c nameserver /etc/resolv.conf; cat /etc/resolv.conf' '^1$'
tcp_before=$(conn_count tcp9000) http_before=$(conn_count http) udp_before=$(conn_count udp9001)
fast_fail nd "HTTP to 198.51.100.80" 'timeout 30 wget -q -O- http://198.51.100.80/'
fast_fail nd "TCP to 198.51.100.90:9000" 'nc -w 30 198.51.100.90 9000 </dev/null | grep banner'
fast_fail nd "HTTPS to 198.51.100.43" 'timeout 30 wget -q -O- --no-check-certificate https://198.51.100.43/'
fast_fail nd "the metadata server" 'timeout 30 wget -q -O- http://169.254.169.254/'
fast_fail nd "DNS through the sandbox's resolver" "nslookup nd-$$.allowed.test" 'REFUSED'
fast_fail nd "DNS straight to the upstream" "nslookup nd2-$$.allowed.test $FAKENET_DNS"
gx nd 'tftp -g -r probe -l /tmp/p 198.51.100.91 9001' >/dev/null
sleep 1
if [ "$(conn_count tcp9000)" = "$tcp_before" ] && [ "$(conn_count http)" = "$http_before" ] &&
	[ "$(conn_count udp9001)" = "$udp_before" ]; then
	ok "no TCP or UDP packet reached the fake internet"; else
	not_ok "the fake internet saw connections: $(tail -n 3 "$FAKENET/conn.log")"; fi
if ! dns_seen "nd-$$.allowed.test" && ! dns_seen "nd2-$$.allowed.test"; then
	ok "the upstream DNS server saw no query"; else not_ok "the upstream saw a query"; fi
$cove stop nd >/dev/null
finish
