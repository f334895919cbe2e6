#!/usr/bin/env bash
# cove-egress without a VM: a "guest" netns whose veth's far end is tap0 in
# a sandbox netns owned by a user namespace (as libcove makes it), an
# uplink up0 to a "host" netns that routes to a fake internet on
# 198.51.100.0/24 (HTTP and TLS for allowed.test and other.test on one
# address, TCP services on high ports, dnsmasq for *.test logging every
# query).  cove-egress runs in the sandbox namespaces; every check is made
# from the guest netns.  Needs root, nft, dnsmasq, python3, curl, openssl.
source tests/integration/lib.sh
source tests/integration/egress/world.sh
egress_world ceg
for a in 198.51.100.8 198.51.100.9 198.51.100.53 198.51.100.91; do in_i ip addr add $a/24 dev in1; done
in_i ip link set in1 up
in_i ip link set lo up
in_i ip route add default via 198.51.100.254

# The fake internet.
mkdir -p "$WORK/www"
echo "hello from the fake internet" >"$WORK/www/index.html"
(cd "$WORK/www" && exec ip netns exec $I python3 -m http.server 80 --bind 198.51.100.7 >/dev/null 2>&1) &
pids+=($!)
for svc in 198.51.100.7:9000 198.51.100.9:9000 198.51.100.8:2222; do
	(cd "$WORK/www" && exec ip netns exec $I python3 -m http.server ${svc#*:} --bind ${svc%:*} >/dev/null 2>&1) &
	pids+=($!)
done
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/k.pem" -out "$WORK/c.pem" -days 1 \
	-subj /CN=allowed.test >/dev/null 2>&1
(exec ip netns exec $I openssl s_server -quiet -accept 198.51.100.7:443 -cert "$WORK/c.pem" \
	-key "$WORK/k.pem" -www >/dev/null 2>&1 </dev/null) &
pids+=($!)
in_i dnsmasq -k --conf-file=/dev/null --no-resolv --no-hosts --user=root \
	--listen-address=198.51.100.53 --bind-interfaces --pid-file="$WORK/dnsmasq.pid" \
	--address=/allowed.test/198.51.100.7 --address=/other.test/198.51.100.7 \
	--address=/pinned.test/198.51.100.8 --address=/private.test/10.0.0.5 \
	--log-queries --log-facility="$WORK/dnsmasq.log" &
pids+=($!)
# wait_port NETNS IP PORT: until something listens there (python starts slowly).
wait_port() {
	local i
	for i in $(seq 150); do
		ip netns exec "$1" python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)' \
			"$2" "$3" 2>/dev/null && return 0
		sleep 0.1
	done
	not_ok "nothing listens on $2:$3"
}
(exec ip netns exec $G python3 -m http.server 8000 --bind 172.16.0.2 --directory "$WORK/www" >/dev/null 2>&1) &
pids+=($!)
wait_port $I 198.51.100.7 80
wait_port $I 198.51.100.7 9000
wait_port $I 198.51.100.9 9000
wait_port $I 198.51.100.8 2222
wait_port $I 198.51.100.7 443
wait_port $G 172.16.0.2 8000
for _ in $(seq 50); do [ -s "$WORK/dnsmasq.log" ] && break; sleep 0.1; done

cat >"$WORK/config.json" <<JSON
{"guest":"172.16.0.2","gateway":"172.16.0.1","tap":"tap0","uplink":"up0","uplink_addr":"100.100.0.2",
 "guest_mac":"06:00:ac:10:00:02",
 "host_addrs":["100.100.0.1"],"upstream":["198.51.100.53:53"],
 "policy":{"mode":"none"}}
JSON
CTL=$WORK/egress.sock
LOG=$WORK/egress.log
ready=$(nsenter -t $SB -U -n -m python3 $D/launch.py "$PWD/build/bin/cove-egress" \
	"$WORK/config.json" "$CTL" "$LOG" 18000 8000 "$WORK/egress.pid" 2>"$WORK/egress.err")
if [ "$ready" = ok ]; then ok "cove-egress is ready (ok on ready_fd)"; else
	not_ok "cove-egress: '$ready' $(cat "$WORK/egress.err")"; finish; fi
EP=$(cat "$WORK/egress.pid")

# fails_fast WHAT CMD...: the command fails, and within 5 s (a hang would take its 8 s).
fails_fast() {
	local what=$1 s e
	shift
	s=$(date +%s%N)
	# (each command carries its own time limit: curl -m, the probes' timeouts)
	if "$@" >/dev/null 2>&1; then not_ok "$what: it worked"; return; fi
	e=$((($(date +%s%N) - s) / 1000000))
	if [ $e -lt 5000 ]; then ok "$what: refused in ${e} ms"; else not_ok "$what: took ${e} ms"; fi
}
works() {
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then ok "$what"; else not_ok "$what: failed"; fi
}
udp_refused() {
	in_g python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(8)
s.connect((sys.argv[1], int(sys.argv[2]))); s.send(b"x")
try:
    s.recv(100)
except socket.timeout:
    sys.exit(1)
except OSError as e:
    # admin-prohibited arrives as EHOSTUNREACH, port-unreachable as ECONNREFUSED
    sys.exit(0 if e.errno in (111, 113) else 1)
' "$@"
}
curl_g() { in_g curl -s -m 8 -o /dev/null -w '%{http_code}' "$@"; }

# --- mode none: nothing leaves, DNS included ---
fails_fast "none: tcp to 198.51.100.7:9000" in_g curl -s -m 8 http://198.51.100.7:9000/
if udp_refused 198.51.100.7 9999; then ok "none: udp gets an ICMP refusal at once"; else not_ok "none: udp"; fi
fails_fast "none: tcp to the upstream resolver directly" in_g curl -s -m 8 http://198.51.100.53:53/
if udp_refused 198.51.100.53 53; then ok "none: udp to the upstream resolver directly is refused"; else not_ok "none: udp to the upstream"; fi
r=$(dns allowed.test)
[ "$r" = REFUSED ] && ok "none: DNS allowed.test REFUSED" || not_ok "none: DNS gave '$r'"
c=$(curl_g http://198.51.100.7/)
[ "$c" = 403 ] && ok "none: HTTP through the proxy gets 403" || not_ok "none: HTTP gave $c"

# --- rules ---
r=$(ctl '{"op":"policy","policy":{"mode":"rules","allow":["allowed.test","198.51.100.0/24:9000","pinned.test:2222","private.test"],"deny":["198.51.100.9/32:9000"]}}')
[ "$r" = '{"ok":true}' ] && ok "ctl policy: $r" || not_ok "ctl policy: $r"
works "rules: CIDR:PORT 198.51.100.7:9000 direct" in_g curl -sf -m 8 http://198.51.100.7:9000/
fails_fast "rules: the deny 198.51.100.9/32:9000 inside the allow wins" in_g curl -s -m 8 http://198.51.100.9:9000/
fails_fast "rules: 198.51.100.7:9001 (not allowed)" in_g curl -s -m 8 http://198.51.100.7:9001/
c=$(curl_g --resolve allowed.test:80:198.51.100.7 http://allowed.test/)
[ "$c" = 200 ] && ok "rules: http://allowed.test via the proxy: 200" || not_ok "rules: allowed.test gave $c"
c=$(curl_g --resolve other.test:80:198.51.100.7 http://other.test/)
[ "$c" = 403 ] && ok "rules: http://other.test (same IP): 403" || not_ok "rules: other.test gave $c"
# An absolute-form target of any scheme must name the Host (issue 26).
c=$(curl_g --resolve allowed.test:80:198.51.100.7 --request-target x://other.test/ http://allowed.test/)
[ "$c" = 403 ] && ok "rules: GET x://other.test/ with Host allowed.test: 403" || not_ok "rules: x://other.test gave $c"
# The guest's chosen address is ignored: allowed.test through 192.0.2.1 still reaches the real one.
c=$(curl_g --resolve allowed.test:80:203.0.113.1 http://allowed.test/)
[ "$c" = 200 ] && ok "rules: the proxy resolves allowed.test itself (guest said 203.0.113.1)" || not_ok "rules: guest address: $c"
r=$(in_g python3 $D/tlsq.py 198.51.100.7 allowed.test)
[ "$r" = handshake ] && ok "rules: TLS with SNI allowed.test: handshake" || not_ok "rules: TLS allowed.test: $r"
r=$(in_g python3 $D/tlsq.py 198.51.100.7 other.test)
[ "$r" = reset ] && ok "rules: TLS with SNI other.test: reset" || not_ok "rules: TLS other.test: $r"
r=$(dns allowed.test)
[ "$r" = "NOERROR 198.51.100.7" ] && ok "rules: DNS allowed.test: $r" || not_ok "rules: DNS allowed.test: $r"
r=$(dns allowed.test A tcp)
[ "$r" = "NOERROR 198.51.100.7" ] && ok "rules: DNS over TCP allowed.test: $r" || not_ok "rules: DNS/TCP: $r"
r=$(dns allowed.test A tcp2)
[ "$r" = "NOERROR 198.51.100.7" ] && ok "rules: two pipelined DNS/TCP queries answered: $r" || not_ok "rules: DNS/TCP pipelined: $r"
r=$(dns other.test)
[ "$r" = REFUSED ] && ok "rules: DNS other.test REFUSED" || not_ok "rules: DNS other.test: $r"
r=$(dns x1.other.test)
sleep 0.3
if grep -q 'other.test' "$WORK/dnsmasq.log"; then not_ok "the upstream saw other.test: $(grep other.test "$WORK/dnsmasq.log" | head -1)"; else
	ok "the upstream's log has no query for other.test"; fi
grep -q 'query\[A\] allowed.test' "$WORK/dnsmasq.log" && ok "the upstream's log has allowed.test" ||
	not_ok "no allowed.test in the upstream's log"
r=$(dns private.test)
[ "$r" = NOERROR ] && ok "rules: DNS private.test (10.0.0.5) stripped: '$r'" || not_ok "rules: private.test: $r"
fails_fast "rules: pinned.test:2222 before a lookup" in_g curl -s -m 8 http://198.51.100.8:2222/
r=$(dns pinned.test)
[ "$r" = "NOERROR 198.51.100.8" ] && ok "rules: DNS pinned.test: $r" || not_ok "rules: DNS pinned.test: $r"
works "rules: pinned.test:2222 after the lookup" in_g curl -sf -m 8 http://198.51.100.8:2222/
fails_fast "rules: the pin is for port 2222 only" in_g curl -s -m 8 http://198.51.100.8:9001/
r=$(ctl '{"op":"status"}')
echo "$r" | grep -q '"pins":[1-9]' && ok "status: $r" || not_ok "status: $r"

# --- anti-spoofing (issue 26): a guest root forges its source ---
# The policy allows allowed.test and 198.51.100.0/24:9000 now.  From the
# guest's NIC, raw frames: a DNS query to the resolver from 198.51.100.91
# whose name carries a mark, a TCP SYN to an allowed address from
# 198.51.100.92, UDP from a foreign source MAC, an ARP claiming the
# guest's address for that MAC.  A UDP server on 198.51.100.91 and a
# capture in the host's namespace (every link) must see none of it.
MARK=m4rk$T
in_i python3 $D/spoof.py listen 198.51.100.91 9001 5 "$WORK/l9001" &
pids+=($!)
in_i python3 $D/spoof.py listen 198.51.100.91 9000 5 "$WORK/l9000" &
pids+=($!)
in_h python3 $D/spoof.py sniff 5 $MARK "$WORK/sniff" &
sniffer=$!
pids+=($sniffer)
for _ in $(seq 50); do [ -e "$WORK/l9001" ] && [ -e "$WORK/l9000" ] && [ -e "$WORK/sniff" ] && break; sleep 0.1; done
nic_before=$(grep -c '"via":"nic"' "$LOG")
in_g python3 $D/spoof.py send gv0 "$(in_sb ip -br link show tap0 | awk '{print $3}')" $MARK ||
	not_ok "spoof.py send failed"
# From the sandbox's namespace itself, a datagram with the gateway's source
# out of up0 (what a reply to a forged query would be): the output chain
# lets only up0's own address leave.
in_sb python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("172.16.0.1", 0)); s.sendto(b"'$MARK'-gw", ("198.51.100.91", 9001))' 2>/dev/null
wait $sniffer
sleep 0.3
[ ! -s "$WORK/l9001" ] && ok "spoof: no DNS reply reached the forged source 198.51.100.91:9001" ||
	not_ok "spoof: the forged source got: $(head -c 300 "$WORK/l9001")"
[ ! -s "$WORK/l9000" ] && ok "spoof: the frame with a foreign source MAC went nowhere" ||
	not_ok "spoof: foreign MAC reached 198.51.100.91:9000: $(head -c 300 "$WORK/l9000")"
[ ! -s "$WORK/sniff" ] && ok "spoof: the host's namespace saw none of the forged traffic" ||
	not_ok "spoof: the host saw $(wc -l <"$WORK/sniff") frames: $(head -3 "$WORK/sniff")"
n=$(in_sb ip neigh show 172.16.0.2 dev tap0)
echo "$n" | grep -qi 02:00:00:00:00:99 && not_ok "spoof: ARP moved the guest's address: $n" ||
	ok "spoof: ARP with a foreign sender changed nothing ($n)"
grep -q "$MARK" "$WORK/dnsmasq.log" && not_ok "spoof: the forged query went upstream" ||
	ok "spoof: the forged query's name never went upstream"
nic=$(($(grep -c '"via":"nic"' "$LOG") - nic_before))
for v in '"rule":"spoofed-source".*"src":"198.51.100.91"' '"rule":"spoofed-source".*"src":"198.51.100.92"' \
	'"dst":"198.51.100.91","port":9000.*"rule":"spoofed-source"'; do
	grep -qE "$v" "$LOG" && ok "spoof: log has $v" || not_ok "spoof: log lacks $v"
done
[ $nic -ge 9 ] && ok "spoof: egress.log counted $nic dropped frames (via nic)" ||
	not_ok "spoof: egress.log counted $nic dropped frames"
# The resolver answers the guest's address only: a query from the sandbox's
# own namespace (source 172.16.0.1, over lo, past every nft check) gets nothing.
r=$(DNSQ_TIMEOUT=1 in_sb python3 $D/dnsq.py 172.16.0.1 allowed.test)
[ "${r%% *}" = error ] && ok "spoof: the resolver does not answer 172.16.0.1 ($r)" ||
	not_ok "spoof: the resolver answered a source that is not the guest: $r"
# The guest itself still resolves, over UDP and TCP.
r=$(dns allowed.test)
[ "$r" = "NOERROR 198.51.100.7" ] && ok "spoof: the guest's own query still resolves: $r" || not_ok "spoof: guest DNS: $r"
r=$(dns allowed.test A tcp)
[ "$r" = "NOERROR 198.51.100.7" ] && ok "spoof: the guest's own query over TCP: $r" || not_ok "spoof: guest DNS/TCP: $r"

# --- a bad policy changes nothing ---
r=$(ctl '{"op":"policy","policy":{"mode":"rules","allow":["198.51.100.7/24"]}}')
echo "$r" | grep -q '"ok":false.*host bits' && ok "bad policy refused: $r" || not_ok "bad policy: $r"
works "after the bad policy: 198.51.100.7:9000 still open" in_g curl -sf -m 8 http://198.51.100.7:9000/

# --- publish ---
r=$(in_sb curl -s -m 8 http://127.0.0.1:18000/)
[ "$r" = "hello from the fake internet" ] && ok "publish: 127.0.0.1:18000 reaches the guest's :8000" ||
	not_ok "publish: '$r'"

# --- runtime change back to none ---
r=$(ctl '{"op":"policy","policy":{"mode":"none"}}')
[ "$r" = '{"ok":true}' ] && ok "ctl policy none: $r" || not_ok "ctl policy none: $r"
fails_fast "after cove net none: 198.51.100.7:9000" in_g curl -s -m 8 http://198.51.100.7:9000/
fails_fast "after cove net none: pinned.test:2222 (pins dropped)" in_g curl -s -m 8 http://198.51.100.8:2222/
r=$(dns allowed.test)
[ "$r" = REFUSED ] && ok "after none: DNS allowed.test REFUSED" || not_ok "after none: DNS: $r"

# --- open: everything but the always-denied ---
r=$(ctl '{"op":"policy","policy":{"mode":"open","deny":["198.51.100.9"]}}')
[ "$r" = '{"ok":true}' ] && ok "ctl policy open: $r" || not_ok "ctl policy open: $r"
works "open: 198.51.100.7:9000" in_g curl -sf -m 8 http://198.51.100.7:9000/
fails_fast "open: the host's veth 100.100.0.1 is always denied" in_g curl -s -m 8 http://100.100.0.1:9000/
fails_fast "open: 169.254.169.254 is always denied" in_g curl -s -m 8 http://169.254.169.254:8080/
fails_fast "open: denied 198.51.100.9" in_g curl -s -m 8 http://198.51.100.9:9000/

# --- the log ---
sleep 0.3
for v in '"via":"direct".*"verdict":"allow"|"verdict":"allow".*"via":"direct"' '"via":"proxy"' '"via":"dns"' '"via":"publish"' '"rule":"198.51.100.0/24:9000"' '"name":"pinned.test"' '"verdict":"deny"' '"bytes":[1-9]'; do
	grep -qE "$v" "$LOG" && ok "log has $v" || not_ok "log lacks $v"
done
python3 -c '
import json, sys
keys = ["time", "proto", "dst", "port", "name", "rule", "verdict", "via", "bytes"]
for l in open(sys.argv[1]):
    o = json.loads(l)
    assert all(k in o for k in keys), l
' "$LOG" && ok "every log line is JSON with the contract's keys ($(wc -l <"$LOG") lines)" || not_ok "log format"

# --- confinement, from outside: two processes (docs/network.md, "The privilege split") ---
# capst PID: "CapEff CapPrm CapBnd Seccomp NoNewPrivs" of PID.
capst() { awk '$1~/^(CapEff|CapPrm|CapBnd|Seccomp|NoNewPrivs):$/{printf "%s ", $2}' /proc/$1/status; }
KP=$(cat /proc/$EP/task/*/children 2>/dev/null | tr -s ' \n' ' ' | sed 's/ *$//')
st=$(capst $EP)
[ "$st" = "0000000000000000 0000000000000000 0000000000000000 1 2 " ] &&
	ok "the parser has no capability (CapEff CapPrm CapBnd 0), NoNewPrivs 1, Seccomp 2" ||
	not_ok "the parser: CapEff CapPrm CapBnd NoNewPrivs Seccomp = $st"
if [ -n "$KP" ] && [ "$KP" -gt 0 ] 2>/dev/null; then
	st=$(capst $KP)
	[ "$st" = "0000000000001000 0000000000001000 0000000000001000 1 2 " ] &&
		ok "the nft keeper ($KP) has CAP_NET_ADMIN alone, NoNewPrivs 1, Seccomp 2" ||
		not_ok "the keeper: CapEff CapPrm CapBnd NoNewPrivs Seccomp = $st"
	[ "$(cat /proc/$EP/comm) $(cat /proc/$KP/comm)" = "cove-egress cove-egress-nft" ] &&
		ok "ps tells them apart: cove-egress and cove-egress-nft" ||
		not_ok "names: $(cat /proc/$EP/comm) $(cat /proc/$KP/comm)"
	# The parser holds no netlink socket but NFLOG's (nf_tables' is the keeper's).
	netlink_of() { ls -l /proc/$1/fd 2>/dev/null | grep -o 'socket:\[[0-9]*\]' | tr -dc '0-9\n' |
		while read -r i; do awk -v i=$i '$10==i{print $2}' /proc/$1/net/netlink; done | sort | tr '\n' ' '; }
	[ "$(netlink_of $EP)" = "12 " ] && ok "the parser's only netlink socket is NFLOG's (NETLINK_NETFILTER)" ||
		not_ok "the parser's netlink sockets (protocols): '$(netlink_of $EP)'"
	files=$(ls -A /proc/$KP/root/ 2>&1 | tr '\n' ' ')
	[ -z "$files" ] && ok "the keeper's root is empty" || not_ok "the keeper's root holds: $files"
else
	not_ok "no nft keeper under cove-egress ($EP): '$KP'"
fi
files=$(ls -A /proc/$EP/root/ 2>&1 | tr '\n' ' ')
[ -z "$files" ] && ok "its root is empty" || not_ok "its root holds: $files"
kill -TERM $EP
for _ in $(seq 50); do kill -0 $EP 2>/dev/null || break; sleep 0.1; done
kill -0 $EP 2>/dev/null && not_ok "still running after SIGTERM" || ok "exits on SIGTERM"
[ -n "$KP" ] && { kill -0 $KP 2>/dev/null && not_ok "the keeper outlived it" || ok "the keeper went with it"; }
rm -f "$WORK/egress.pid"

# --- each half exits without the other: a killed keeper takes the parser down ---
rm -f "$CTL"
ready=$(nsenter -t $SB -U -n -m python3 $D/launch.py "$PWD/build/bin/cove-egress" \
	"$WORK/config.json" "$CTL" "$LOG" 18001 8000 "$WORK/egress.pid" 2>>"$WORK/egress.err")
EP=$(cat "$WORK/egress.pid")
KP=$(cat /proc/$EP/task/*/children 2>/dev/null | tr -s ' \n' ' ' | sed 's/ *$//')
if [ "$ready" = ok ] && [ -n "$KP" ]; then
	kill -KILL $KP
	for _ in $(seq 50); do kill -0 $EP 2>/dev/null || break; sleep 0.1; done
	kill -0 $EP 2>/dev/null && { not_ok "the parser outlived its keeper"; kill -KILL $EP; } ||
		ok "the parser exits when the keeper is killed"
else
	not_ok "second start: '$ready', keeper '$KP'"
fi
rm -f "$WORK/egress.pid"
[ "$FAILED" = 0 ] || { echo "--- cove-egress stderr"; cat "$WORK/egress.err"; echo "--- log"; cat "$LOG"; }
finish
