# The network tests' fake internet (sourced after lib.sh; inside scripts/kvm-host).
#
# fakenet_up makes, once per emulated-host boot, a namespace `fakenet` joined
# to the host by the veth wan0 (host 203.0.113.1/24, fakenet 203.0.113.2/24)
# and routes 198.51.100.0/24 and 169.254.169.254 there.  In it run
# tests/integration/fakenet.py (HTTP, HTTPS from a test CA, TCP, UDP echo,
# "metadata") and dnsmasq for *.test at 198.51.100.53, which logs every query
# it receives to $FAKENET/dns.log.  Only these addresses are ever used.
FAKENET=/run/cove-fakenet
FAKENET_DNS=198.51.100.53
FAKENET_CA=$FAKENET/ca.pem

fakenet_up() {
	if [ -e "$FAKENET/fakenet.ready" ] && ip netns pids fakenet 2>/dev/null | grep -q .; then
		return 0
	fi
	mkdir -p "$FAKENET/www/pypi.test" "$FAKENET/www/git.test"
	ip netns add fakenet
	ip link add wan0 type veth peer name wan1
	ip link set wan1 netns fakenet
	ip addr add 203.0.113.1/24 dev wan0
	ip link set wan0 up
	ip -n fakenet addr add 203.0.113.2/24 dev wan1
	ip -n fakenet link set wan1 up
	ip -n fakenet link set lo up
	local a
	for a in 198.51.100.80 198.51.100.43 198.51.100.90 198.51.100.91 198.51.100.53 169.254.169.254; do
		ip -n fakenet addr add "$a/32" dev lo
	done
	ip -n fakenet route add default via 203.0.113.1
	ip route add 198.51.100.0/24 via 203.0.113.2
	ip route add 169.254.169.254/32 via 203.0.113.2
	# The test CA and a server certificate for the HTTPS names.
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj /CN=cove-test-ca -keyout "$FAKENET/ca.key" -out "$FAKENET_CA" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=secure.test \
		-keyout "$FAKENET/srv.key" -out "$FAKENET/srv.csr" 2>/dev/null
	printf 'subjectAltName=DNS:secure.test,DNS:other.test,DNS:allowed.test\n' >"$FAKENET/san.ext"
	openssl x509 -req -in "$FAKENET/srv.csr" -CA "$FAKENET_CA" -CAkey "$FAKENET/ca.key" \
		-CAcreateserial -days 2 -extfile "$FAKENET/san.ext" -out "$FAKENET/srv.pem" 2>/dev/null
	: >"$FAKENET/dns.log"
	ip netns exec fakenet dnsmasq --no-resolv --no-hosts --bind-interfaces \
		--listen-address=$FAKENET_DNS --except-interface=wan1 \
		--address=/allowed.test/198.51.100.80 --address=/other.test/198.51.100.80 \
		--address=/pypi.test/198.51.100.80 --address=/git.test/198.51.100.80 \
		--address=/secure.test/198.51.100.43 --address=/pin.test/198.51.100.90 \
		--address=/udp.test/198.51.100.91 --address=/metadata.test/169.254.169.254 \
		--address=/private.test/10.1.2.3 --address=/loop.test/127.0.0.1 \
		--local=/test/ --local-ttl=60 --log-queries --log-facility="$FAKENET/dns.log" \
		--pid-file="$FAKENET/dnsmasq.pid"
	ip netns exec fakenet setsid python3 tests/integration/fakenet.py "$FAKENET/www" \
		"$FAKENET/conn.log" "$FAKENET/srv.pem" "$FAKENET/srv.key" \
		>"$FAKENET/fakenet.out" 2>&1 </dev/null &
	wait_for "$FAKENET/fakenet.ready" ready 60 || {
		echo "fakenet: services did not start: $(tail -n 5 "$FAKENET/fakenet.out")" >&2
		return 1
	}
}

# dns_seen NAME: did the fake upstream receive a query for NAME?
dns_seen() {
	grep -qiF "query[A] $1 " "$FAKENET/dns.log" || grep -qiF "query[AAAA] $1 " "$FAKENET/dns.log"
}
