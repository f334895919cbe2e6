#!/usr/bin/env bash
# virtio-net on a TAP: a guest on 172.16.0.2/30 behind TAP 172.16.0.1/30
# pings the host and is pinged back, moves several MB each way over TCP with
# matching SHA-256 sums (busybox nc in the guest, Python on the host), then is
# snapshotted, and its restore (handed a new TAP as an inherited fd, as
# libcove does) keeps the NIC: ping and TCP both ways again.  cove-vmm runs
# with its default seccomp filters (kill), so TUNSETOFFLOAD and the TAP's
# reads and writes are checked against the I/O thread's list.
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4
command -v ip >/dev/null || { echo "skip: no ip(8)"; exit 77; }
# ping(8) of busybox, which the images' builder needs anyway.
ping() { busybox ping "$@"; }
command -v busybox >/dev/null || { echo "skip: no busybox"; exit 77; }
# ping_guest: a reply within about two minutes (a restore in the emulated
# host takes a while before its vCPUs run).
ping_guest() {
	local i
	for ((i = 0; i < 24; i++)); do
		ping -c 1 -W 5 172.16.0.2 >/dev/null 2>&1 && return 0
	done
	return 1
}
[ -c /dev/net/tun ] || { echo "skip: no /dev/net/tun"; exit 77; }
k=$(stage vmlinux build/vmlinux)
disk=$(stage disk.ext4 build/images/minimal.ext4)
helper="python3 tests/integration/net_helper.py"
tap0=vnt$$a # not cv*: the host table inet cove owns those names
tap1=vnt$$b
HOST_MAC=06:00:ac:10:00:01
MB=6

cleanup() {
	jobs -p | xargs -r kill 2>/dev/null
	ip link del "$tap0" 2>/dev/null
	ip link del "$tap1" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# mktap NAME: a TAP with a vnet header, the host end of the guest's /30.
# Both TAPs get the contract's host MAC, so the guest's ARP entry stays
# right across the restore (as every fork's namespace has it).
mktap() {
	ip tuntap add dev "$1" mode tap vnet_hdr &&
		ip link set dev "$1" address "$HOST_MAC" &&
		ip addr add 172.16.0.1/30 dev "$1" &&
		ip link set dev "$1" up
}
mktap "$tap0" || { echo "skip: cannot create a TAP"; exit 77; }

head -c $((MB << 20)) /dev/urandom >"$WORK/h2g"
h2g_sum=$(sha256sum <"$WORK/h2g" | cut -d' ' -f1)
$helper send 5002 "$WORK/h2g" "$WORK/ready1" &
$helper recv 5001 "$WORK/g2h.sum" "$WORK/ready2" &
# wait_ready FILE...: until each helper listens (Python starts slowly here).
wait_ready() {
	local f i
	for f in "$@"; do
		for ((i = 0; i < 600; i++)); do [ -e "$f" ] && break; sleep 0.1; done
		[ -e "$f" ] || { not_ok "host helper did not start"; finish; }
	done
}
wait_ready "$WORK/ready1" "$WORK/ready2"

con=$WORK/con.log
"$VMM" --kernel "$k" --memory 256 --disk "$disk" --api "$WORK/api.sock" --console "$con" \
	--net "tap=$tap0" --cmdline "$(guest_cmd "
	ip addr add 172.16.0.2/30 dev eth0 && ip link set eth0 up &&
		echo \"NET-UP \$(cat /sys/class/net/eth0/address)\"
	ping -c 3 -W 10 172.16.0.1 >/dev/null && echo GPING-OK || echo GPING-FAIL
	echo \"H2G \$(nc 172.16.0.1 5002 </dev/null | sha256sum)\"
	dd if=/dev/urandom of=/tmp/g bs=1M count=$MB 2>/dev/null
	echo \"G2H \$(sha256sum </tmp/g)\"
	nc 172.16.0.1 5001 </tmp/g && echo G2H-SENT
	echo WAIT-SNAPSHOT
	nc -l -p 5003 </dev/null >/tmp/r
	echo \"RESTORED-H2G \$(sha256sum </tmp/r)\"
	nc 172.16.0.1 5004 </tmp/g && echo G2H2-SENT
	echo NET-DONE")" >"$WORK/vmm.err" 2>&1 &
pid=$!

if wait_for "$con" '^NET-UP 06:00:ac:10:00:02' 300; then ok "eth0 is up with the default MAC"; else
	not_ok "no eth0"; tail -n 30 "$con" "$WORK/vmm.err"; kill $pid; finish; fi
if wait_for "$con" '^GPING-(OK|FAIL)' 120 && grep -q '^GPING-OK' "$con"; then
	ok "the guest pings the host"; else not_ok "guest ping"; fi
if wait_for "$con" '^H2G ' 300 && grep -q "^H2G $h2g_sum" "$con"; then
	ok "host -> guest: $MB MiB over TCP, sums match"; else
	not_ok "host -> guest: $(grep '^H2G' "$con") want $h2g_sum"; fi
if wait_for "$con" '^WAIT-SNAPSHOT' 300 && [ -f "$WORK/g2h.sum" ]; then
	want=$(grep '^G2H ' "$con" | awk '{print $2}')
	got=$(cut -d' ' -f1 "$WORK/g2h.sum")
	if [ -n "$want" ] && [ "$want" = "$got" ] && grep -q "^$got $((MB << 20))\$" "$WORK/g2h.sum"; then
		ok "guest -> host: $MB MiB over TCP, sums match"; else
		not_ok "guest -> host: host got $(cat "$WORK/g2h.sum"), guest sent $want"; fi
else
	not_ok "guest -> host transfer did not finish"; tail -n 10 "$con"
fi
if ping_guest; then ok "the host pings the guest"; else
	not_ok "host ping"; fi

stats=$(vmm_api "$WORK/api.sock" '{"op":"stats"}')
if python3 -c 'import json,sys; n=json.loads(sys.argv[1])["net"]; assert n["rx_bytes"] >= int(sys.argv[2]) and n["tx_bytes"] >= int(sys.argv[2]) and n["rx_bad_chains"] == 0 and n["tx_bad_chains"] == 0, n' "$stats" $((MB << 20)); then
	ok "stats: the NIC's byte counters cover both transfers, no bad chains"; else
	not_ok "stats: $stats"; fi

snap=$WORK/snap
reply=$(vmm_api "$WORK/api.sock" "{\"op\":\"snapshot\",\"dir\":\"$snap\",\"then\":\"stop\"}")
wait $pid
echo "snapshot: $reply; the original stopped with $?"
if [[ $reply == *'"ok":true'* ]]; then ok "snapshot of a VM with a NIC"; else
	not_ok "snapshot: $reply"; tail -n 5 "$WORK/vmm.err"; finish; fi
ip link del "$tap0"

# The restore gets a new TAP, inherited as fd 3.
mktap "$tap1" || { not_ok "second TAP"; finish; }
$helper recv 5004 "$WORK/g2h2.sum" "$WORK/ready3" &
wait_ready "$WORK/ready3"
head -c $((MB << 20)) /dev/urandom >"$WORK/h2g2"
h2g2_sum=$(sha256sum <"$WORK/h2g2" | cut -d' ' -f1)
mkdir -p "$WORK/ov"
con2=$WORK/con2.log
$helper exec-tap "$tap1" "$PWD/$VMM" --restore "$snap" --overlay-dir "$WORK/ov" \
	--console "$con2" --api "$WORK/api2.sock" --net fd=3 >"$WORK/vmm2.err" 2>&1 &
pid2=$!
if ping_guest; then ok "restored: the host pings the guest on the new TAP"; else
	not_ok "restored: no ping"; tail -n 10 "$WORK/vmm2.err" "$con2"; fi
if $helper push 172.16.0.2 5003 "$WORK/h2g2" && wait_for "$con2" '^RESTORED-H2G ' 300 &&
	grep -q "^RESTORED-H2G $h2g2_sum" "$con2"; then
	ok "restored: host -> guest over TCP, sums match"; else
	not_ok "restored: host -> guest: $(grep '^RESTORED' "$con2")"; tail -n 10 "$WORK/vmm2.err"; fi
if wait_for "$con2" '^NET-DONE' 300 && [ -f "$WORK/g2h2.sum" ]; then
	want=$(grep '^G2H ' "$con" | awk '{print $2}')
	if [ "$(cut -d' ' -f1 "$WORK/g2h2.sum")" = "$want" ]; then
		ok "restored: guest -> host over TCP, sums match"; else
		not_ok "restored: guest -> host: $(cat "$WORK/g2h2.sum") want $want"; fi
else
	not_ok "restored: guest -> host did not finish"; tail -n 10 "$con2"
fi
if grep -q "^RESTORED-H2G" "$con2" && ! grep -q "NET-UP" "$con2"; then
	ok "the restored guest went on where it was (no second boot)"; else
	not_ok "restored guest rebooted"; fi
wait $pid2
echo "restored VM ended with $?"
if grep -q 'Bad system call\|SIGSYS' "$WORK/vmm.err" "$WORK/vmm2.err"; then
	not_ok "seccomp trouble: $(grep -hi 'seccomp\|SIGSYS' "$WORK/vmm.err" "$WORK/vmm2.err")"; fi
finish
