#!/usr/bin/env bash
# --net open reaches the fake internet but never the always-denied places:
# the metadata server, the host's own addresses (its veth end, its other
# links) and other sandboxes.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

$cove start --name op1 --net open >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
$cove start --name op2 --net open >/dev/null 2>"$WORK/err" || { not_ok "start op2: $(cat "$WORK/err")"; finish; }
works op1 "the fake internet is open" 'timeout 30 wget -q -O- http://198.51.100.80/' '^fake:'
works op1 "TCP to a high port is open" 'echo x | nc -w 10 198.51.100.90 9000' 'banner pin'
fast_fail op1 "the metadata server is not" 'timeout 30 wget -q -O- http://169.254.169.254/'
# The host's addresses: every IPv4 address of the emulated host.
python3 -m http.server --bind 0.0.0.0 18081 >/dev/null 2>&1 &
srv=$!
sleep 3
for a in $(ip -4 -o addr show | awk '{print $4}' | cut -d/ -f1 | grep -v '^127\.'); do
	fast_fail op1 "the host's address $a" "timeout 30 wget -q -O- http://$a:18081/"
done
kill $srv
# Another sandbox: op2 serves on 8080; op1 tries its uplink address and the
# shared guest address.
gx op2 'mkdir -p /tmp/w && echo op2 > /tmp/w/index.html && (httpd -p 8080 -h /tmp/w &)' >/dev/null
works op2 "op2 serves itself" 'timeout 10 wget -q -O- http://127.0.0.1:8080/' '^op2$'
for a in $(ip -4 -o addr show | awk '$2 ~ /^cv/ {print $4}' | cut -d/ -f1); do
	peer=$(python3 -c "import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]) + 1)" "$a")
	fast_fail op1 "another sandbox's uplink $peer" "timeout 30 wget -q -O- http://$peer:8080/"
done
$cove stop op1 op2 >/dev/null
finish
