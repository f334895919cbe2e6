# The world of the cove-egress tests without a VM (test_egress_standalone,
# test_egress_proxy), sourced after lib.sh.  egress_world PREFIX makes the
# "guest" netns $G, the sandbox (a user namespace owning net and mount
# namespaces, held by sleep: pid $SB), the "host" $H and the fake internet
# $I with 198.51.100.7 (the test adds its other addresses and sets in1
# up), their veths and addresses; the helpers in_g, in_h, in_i, in_sb; a
# cleanup trap that also kills "${pids[@]}" and $WORK/egress.pid.  Skips
# (77) unless root with cove-egress built and the tools it needs.
egress_world() {
	need build/bin/cove-egress
	[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
	for t in ip nft dnsmasq python3 curl openssl unshare nsenter; do
		command -v $t >/dev/null || { echo "skip: no $t"; exit 77; }
	done
	D=$PWD/tests/integration/egress
	T=$$
	G=$1-g$T H=$1-h$T I=$1-i$T
	pids=()
	cleanup() {
		local p
		[ -f "$WORK/egress.pid" ] && kill "$(cat "$WORK/egress.pid")" 2>/dev/null
		for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
		ip netns del $G 2>/dev/null
		ip netns del $H 2>/dev/null
		ip netns del $I 2>/dev/null
		rm -rf "$WORK"
	}
	trap cleanup EXIT

	in_g() { ip netns exec $G "$@"; }
	in_h() { ip netns exec $H "$@"; }
	in_i() { ip netns exec $I "$@"; }

	# The sandbox: a user namespace owning net and mount namespaces, held by sleep.
	unshare -U -r -n -m --propagation private sleep 3600 &
	SB=$!
	pids+=($SB)
	for _ in $(seq 50); do
		[ "$(readlink /proc/$SB/ns/net)" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.1
	done
	in_sb() { nsenter -t $SB -n "$@"; }

	ip netns add $G && ip netns add $H && ip netns add $I || { not_ok "ip netns add"; finish; }
	ip link add gv0 netns $G type veth peer name tap0 netns /proc/$SB/ns/net 2>/dev/null ||
		{ ip link add gv0 type veth peer name tap0 && ip link set gv0 netns $G &&
			ip link set tap0 netns $SB; }
	ip link add up0 type veth peer name cv0 && ip link set up0 netns $SB && ip link set cv0 netns $H
	ip link add in0 type veth peer name in1 && ip link set in0 netns $H && ip link set in1 netns $I

	# The guest's MAC, as cove-vmm gives it: tap0's ingress takes no other.
	in_g ip link set gv0 address 06:00:ac:10:00:02
	in_g ip addr add 172.16.0.2/30 dev gv0
	in_g ip link set gv0 up
	in_g ip link set lo up
	in_g ip route add default via 172.16.0.1
	in_sb ip addr add 172.16.0.1/30 dev tap0
	in_sb ip addr add 100.100.0.2/30 dev up0
	in_sb ip link set tap0 up
	in_sb ip link set up0 up
	in_sb ip link set lo up
	in_sb ip route add default via 100.100.0.1
	in_sb sysctl -qw net.ipv4.ip_forward=1
	in_h ip addr add 100.100.0.1/30 dev cv0
	in_h ip addr add 198.51.100.254/24 dev in0
	in_h ip link set cv0 up
	in_h ip link set in0 up
	in_h sysctl -qw net.ipv4.ip_forward=1
	in_i ip addr add 198.51.100.7/24 dev in1
}

# dns NAME...: a DNS query from the guest to the sandbox's resolver
# (dnsq.py prints the answer).
dns() { in_g python3 $D/dnsq.py 172.16.0.1 "$@"; }
# ctl JSON: one request to cove-egress's ctl socket $CTL.
ctl() { vmm_api "$CTL" "$1"; }
