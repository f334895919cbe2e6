#!/usr/bin/env bash
# NAME:PORT rules are pinned by DNS: the port on the name's addresses opens
# once the sandbox's resolver has answered for the name, and not before.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

$cove start --name pn --allow pin.test:9000 >/dev/null 2>"$WORK/err" || {
	not_ok "start: $(cat "$WORK/err")"; finish; }
fast_fail pn "198.51.100.90:9000 is closed before any lookup" 'nc -w 30 198.51.100.90 9000 </dev/null | grep banner'
works pn "nslookup pin.test" 'nslookup -type=a pin.test' '198\.51\.100\.90'
works pn "198.51.100.90:9000 is open after it" 'echo x | nc -w 10 198.51.100.90 9000' 'banner pin'
fast_fail pn "other ports of that address stay closed" 'timeout 30 wget -q -O- http://198.51.100.90/'
$cove stop pn >/dev/null
finish
