#!/usr/bin/env bash
# --publish HOSTPORT:GUESTPORT forwards a host port (loopback by default)
# to a server in the guest, even when the guest has no egress at all.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

$cove start --name pb --net none --publish 18090:8080 >/dev/null 2>"$WORK/err" || {
	not_ok "start: $(cat "$WORK/err")"; finish; }
gx pb 'mkdir -p /tmp/w && echo served-from-guest > /tmp/w/index.html && (httpd -p 8080 -h /tmp/w &)' >/dev/null
out=$(curl -sS -m 30 http://127.0.0.1:18090/ 2>&1)
if [ "$out" = served-from-guest ]; then ok "127.0.0.1:18090 reaches the guest's :8080"; else
	not_ok "publish: $out"; fi
a=$(ip -4 -o addr show | awk '$2 !~ /^(lo|cv)/ {print $4; exit}' | cut -d/ -f1)
if [ -n "$a" ] && ! curl -sS -m 10 "http://$a:18090/" >/dev/null 2>&1; then
	ok "not published on $a (loopback only)"; else not_ok "published beyond loopback ($a)"; fi
out=$($cove start --name pb2 --net none --publish 18090:8080 2>&1)
if [ $? != 0 ] && [ "$(wc -l <<<"$out")" = 1 ]; then ok "a port in use is refused: $out"; else
	not_ok "second publish of 18090: $out"; $cove stop pb2 >/dev/null 2>&1; fi
$cove stop pb >/dev/null
finish
