#!/usr/bin/env bash
# A sandbox's network, set up and torn down by libcove (lib/net.c), with a
# stand-in cove-egress (build/itest/fake_egress, copied as cove-egress):
# cove start --allow makes cv<K>, the .net/<K> claim, cove-egress in its
# own namespaces under its own uid, tap0 given to cove-vmm as fd 3, the
# host table inet cove; cove net replaces the policy; cove stop leaves
# nothing behind; after kill -9 of cove-vmm and cove-egress, cove ls
# cleans the leftovers; bad input and a failing egress leave nothing.
source tests/integration/lib.sh
source tests/integration/netlib.sh
fake_egress_env
rt=$COVE_RUNTIME_DIR

meta_num() { meta "$1" | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"; }
# until_ok SECONDS 'shell test': polls every 0.1 s.
until_ok() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		eval "$2" && return 0
		sleep 0.1
	done
	return 1
}

out=$($cove start --name n1 --allow 198.51.100.0/24:8000 2>"$WORK/err")
rc=$?
[ "$rc" = 0 ] && [ "$out" = n1 ] && ok "start with --allow" ||
	not_ok "start with --allow: status $rc, $(head -c 400 "$WORK/err"); $(tail -3 "$rt/n1/vmm.log" 2>/dev/null) $(cat "$rt/n1/egress.err" 2>/dev/null)"
k=$(meta n1 | sed -n 's/.*"index":\([0-9]*\).*/\1/p')
epid=$(meta_num n1 egress_pid)
vpid=$(meta_num n1 pid)
[ -n "$k" ] && [ -e "$rt/.net/$k" ] && ok "index $k claimed" || not_ok "no index claim: k='$k'"
ip link show "cv$k" >/dev/null 2>&1 && ok "host link cv$k exists" || not_ok "no link cv$k"
ip -4 addr show "cv$k" | grep -q "100.100.$((4 * k / 256)).$((4 * k % 256 + 1))/30" &&
	ok "cv$k has the host end's address" || not_ok "cv$k address: $(ip -4 -o addr show "cv$k")"
[ -n "$epid" ] && [ -d "/proc/$epid" ] && ok "cove-egress runs (pid $epid)" || not_ok "no egress: '$epid'"
euid=$(awk '/^Uid:/{print $3}' "/proc/$epid/status" 2>/dev/null)
[ -n "$euid" ] && [ "$euid" != 0 ] && ok "cove-egress runs as jail uid $euid" || not_ok "egress uid '$euid'"
[ "$(readlink "/proc/$epid/ns/net")" != "$(readlink /proc/self/ns/net)" ] &&
	[ "$(readlink "/proc/$epid/ns/user")" != "$(readlink /proc/self/ns/user)" ] &&
	ok "cove-egress has its own net and user namespaces" || not_ok "egress shares our namespaces"
nsenter -t "$epid" -n ip -o link show tap0 >/dev/null 2>&1 &&
	nsenter -t "$epid" -n ip -4 -o addr show tap0 | grep -q '172.16.0.1/30' &&
	nsenter -t "$epid" -n ip route | grep -q "default via 100.100" &&
	ok "its namespace: tap0 172.16.0.1/30 and the default route" ||
	not_ok "namespace: $(nsenter -t "$epid" -n ip -o addr 2>&1 | head -c 400)"
[ "$(readlink "/proc/$vpid/fd/3")" = /dev/net/tun ] && ok "cove-vmm holds the TAP as fd 3" ||
	not_ok "cove-vmm fd 3: $(readlink "/proc/$vpid/fd/3")"
[ "$(readlink "/proc/$vpid/ns/net")" != "$(readlink "/proc/$epid/ns/net")" ] &&
	ok "cove-vmm stays in a namespace of its own" || not_ok "cove-vmm is in egress's netns"
[ "$(cat "/proc/$epid/cgroup")" = "$(cat "/proc/$vpid/cgroup")" ] &&
	ok "cove-egress is in the sandbox's cgroup" || not_ok "cgroups: $(cat "/proc/$epid/cgroup") vs $(cat "/proc/$vpid/cgroup")"
nft list table inet cove 2>/dev/null | grep -q masquerade &&
	nft list set inet cove dns 2>/dev/null | grep -q '198.51.100.53 . 53' &&
	ok "the host table inet cove (masquerade, DNS upstream)" || not_ok "host table: $(nft list table inet cove 2>&1 | head -c 300)"
[ "$(cat /proc/sys/net/ipv4/ip_forward)" = 1 ] && ok "ip_forward on" || not_ok "ip_forward off"
mac=$($cove exec n1 -- cat /sys/class/net/eth0/address 2>&1)
[ "$mac" = 06:00:ac:10:00:02 ] && ok "the guest has eth0 with its MAC" || not_ok "guest eth0: '$mac'"
$cove exec n1 -- cat /proc/cmdline 2>&1 | grep -q 'cove.net=172.16.0.2/30,172.16.0.1,172.16.0.1' &&
	ok "the kernel command line carries cove.net=" || not_ok "no cove.net= on the command line"

# cove net: the policy replaced through egress.sock, recorded, logged.
$cove net n1 --allow 203.0.113.0/24 --deny 203.0.113.7 2>"$WORK/err" &&
	meta n1 | grep -q '"203.0.113.0/24"' && ! meta n1 | grep -q '198.51.100.0/24:8000' &&
	ok "cove net replaces the recorded policy" || not_ok "cove net: $(cat "$WORK/err")"
$cove logs n1 --egress | grep -q verdict && ok "cove logs --egress prints egress.log" ||
	not_ok "cove logs --egress: $($cove logs n1 --egress 2>&1 | head -c 200)"
$cove net n1 --deny example.test 2>"$WORK/err"
rc=$?
[ "$rc" = 2 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && ok "cove net refuses a domain deny in one line" ||
	not_ok "cove net domain deny: status $rc, $(cat "$WORK/err")"
$cove ls --json 2>/dev/null | grep -q '"net"' && ok "cove ls shows the network" ||
	not_ok "cove ls --json: $($cove ls --json 2>&1 | head -c 300)"

$cove stop n1
sleep 0.2
[ ! -d "/proc/$epid" ] && ok "stop: cove-egress gone" || not_ok "stop: egress $epid still runs"
[ -z "$(links)" ] && ok "stop: no cv* link left" || not_ok "stop: links left: $(links)"
[ -z "$(ls -A "$rt/.net" 2>/dev/null)" ] && ok "stop: the .net claim is gone" ||
	not_ok "stop: claims left: $(ls "$rt/.net")"
[ -z "$(ls -A "$rt/.ids" 2>/dev/null)" ] && ok "stop: both uid claims are gone" ||
	not_ok "stop: uid claims left: $(ls "$rt/.ids")"

# A sandbox without network flags: no NIC, no egress, no claim.
$cove start --name plain >/dev/null 2>"$WORK/err" || not_ok "plain start: $(cat "$WORK/err")"
$cove exec plain -- test -e /sys/class/net/eth0 && not_ok "a plain sandbox has eth0" ||
	ok "no network flags: no NIC"
[ -z "$(ls -A "$rt/.net" 2>/dev/null)" ] && [ -z "$(links)" ] && ok "no network flags: no claim, no link" ||
	not_ok "plain sandbox made a network"
$cove net plain --allow 198.51.100.1 2>"$WORK/err"
rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q 'started without networking' "$WORK/err" &&
	ok "cove net on a sandbox without networking: one line" || not_ok "cove net plain: status $rc, $(cat "$WORK/err")"
$cove stop plain

# The host table is made once: a later start finds it in <base>/.net.host
# (boot id, the table's handle) and skips the libnftables transaction,
# which would flush the chains; a table deleted meanwhile is made again.
rec=$rt/.net.host
handle() { nft -a list table inet cove 2>/dev/null | sed -n 's/^table inet cove { # handle \([0-9]*\)$/\1/p'; }
h=$(handle)
[ -n "$h" ] && grep -q " $h\$" <(head -n1 "$rec" 2>/dev/null) && ok "the record names the host table (handle $h)" ||
	not_ok "record: '$(head -n1 "$rec" 2>&1)', handle '$h'"
nft add rule inet cove input counter comment \"itest-probe\"
$cove start --name n4 --net none >/dev/null 2>"$WORK/err" || not_ok "start n4: $(cat "$WORK/err")"
nft list chain inet cove input | grep -q itest-probe && ok "a second start left the host table alone" ||
	not_ok "a second start made the host table again"
$cove stop n4
nft delete table inet cove
$cove start --name n4 --net none >/dev/null 2>"$WORK/err" || not_ok "start n4 again: $(cat "$WORK/err")"
h2=$(handle)
nft list table inet cove 2>/dev/null | grep -q masquerade && [ -n "$h2" ] && grep -q " $h2\$" <(head -n1 "$rec") &&
	ok "a deleted host table is made again (handle $h2), and recorded" ||
	not_ok "after nft delete table: $(nft list table inet cove 2>&1 | head -c 200); record $(head -n1 "$rec")"
$cove stop n4

# kill -9 of both: the next cove ls cleans up.
$cove start --name n2 --net open >/dev/null 2>"$WORK/err" || not_ok "start n2: $(cat "$WORK/err")"
k2=$(meta n2 | sed -n 's/.*"index":\([0-9]*\).*/\1/p')
epid=$(meta_num n2 egress_pid)
vpid=$(meta_num n2 pid)
kill -9 "$vpid" "$epid"
sleep 0.5
$cove ls >"$WORK/ls" 2>&1
grep -q 'n2.*dead' "$WORK/ls" && ok "cove ls reports n2 dead" || not_ok "cove ls: $(cat "$WORK/ls")"
until_ok 5 '[ -z "$(links)" ]' && ok "kill -9: no cv* link after cove ls" || not_ok "kill -9: links left: $(links)"
[ ! -e "$rt/.net/$k2" ] && ok "kill -9: the .net claim is gone" || not_ok "kill -9: claim $k2 left"

# kill -9 of cove-vmm only: cove ls stops cove-egress too.
$cove start --name n3 --net none >/dev/null 2>"$WORK/err" || not_ok "start n3: $(cat "$WORK/err")"
epid=$(meta_num n3 egress_pid)
kill -9 "$(meta_num n3 pid)"
sleep 0.5
$cove ls >/dev/null 2>&1
until_ok 5 "[ ! -d /proc/$epid ]" && ok "a dead VMM's cove-egress is stopped by cove ls" ||
	not_ok "egress $epid outlived its dead VMM"
until_ok 5 '[ -z "$(links)" ]' && [ -z "$(ls -A "$rt/.net" 2>/dev/null)" ] &&
	ok "and its link and claim are gone" || not_ok "left: $(links) $(ls "$rt/.net")"

# Bad input: one line, nothing started.
$cove start --name bad --allow 'not a rule!' >/dev/null 2>"$WORK/err"
rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q 'not a rule!' "$WORK/err" &&
	[ ! -e "$rt/bad" ] && ok "a bad --allow: one line, no entry" || not_ok "bad --allow: status $rc, $(cat "$WORK/err")"
$cove start --name bad --publish 99999:80 >/dev/null 2>"$WORK/err"
[ $? = 1 ] && grep -q -- '--publish' "$WORK/err" && ok "a bad --publish: refused" || not_ok "bad --publish: $(cat "$WORK/err")"
# An egress that fails: its line, and nothing left.
$cove start --name bad --net none --deny 192.0.2.99/32 >/dev/null 2>"$WORK/err"
rc=$?
[ "$rc" = 1 ] && grep -q 'cove-egress: fake failure' "$WORK/err" && ok "a failing cove-egress's line is reported" ||
	not_ok "failing egress: status $rc, $(cat "$WORK/err")"
# (uid claims of the sandboxes killed above are reclaimed lazily: their
# directories are gone.)
[ ! -e "$rt/bad" ] && [ -z "$(links)" ] && [ -z "$(ls -A "$rt/.net" 2>/dev/null)" ] &&
	! grep -qx bad "$rt"/.ids/* 2>/dev/null && ok "and nothing is left of it" ||
	not_ok "failing egress left: entry $(ls "$rt"), links $(links), claims $(ls "$rt/.net" "$rt/.ids" 2>&1)"

# A --publish port in use: one line naming it.
python3 -c 'import socket,time;s=socket.socket();s.bind(("127.0.0.1",18081));s.listen();time.sleep(60)' &
pyp=$!
until_ok 20 'grep -qi ":46A1 00000000:0000 0A" /proc/net/tcp' # 18081, LISTEN
$cove start --name bad --publish 18081:80 >/dev/null 2>"$WORK/err"
rc=$?
kill $pyp 2>/dev/null
[ "$rc" = 1 ] && grep -q '127.0.0.1:18081' "$WORK/err" && [ ! -e "$rt/bad" ] &&
	ok "a --publish port in use: refused, nothing left" || not_ok "publish in use: status $rc, $(cat "$WORK/err")"

# The doctor's network line (root here).
$cove doctor >"$WORK/doctor" 2>&1
grep -E '^ *ok +network' "$WORK/doctor" | grep -q 'available: root yes, /dev/net/tun ok, nf_tables ok' &&
	ok "cove doctor: network available" || not_ok "doctor: $(grep network "$WORK/doctor")"

# Not root: one clear line, nothing started, no runtime entry.
cp build/bin/cove "$WORK/bin/cove"
chmod 755 "$WORK" "$WORK/bin" "$WORK/bin/cove"
nrt=/tmp/cove-nobody-$$
setpriv --reuid 65534 --regid 65534 --clear-groups env COVE_RUNTIME_DIR=$nrt \
	COVE_KERNEL=$COVE_KERNEL COVE_IMAGE=$COVE_IMAGE COVE_VMM=$COVE_VMM COVE_EGRESS=$COVE_EGRESS \
	"$WORK/bin/cove" start --name x --allow 198.51.100.1 >/dev/null 2>"$WORK/err"
rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q 'needs root' "$WORK/err" &&
	[ -z "$(ls -A "$nrt" 2>/dev/null)" ] && ok "not root: one line ($(cat "$WORK/err"))" ||
	not_ok "not root: status $rc, $(cat "$WORK/err"), runtime: $(ls -A "$nrt" 2>&1)"
setpriv --reuid 65534 --regid 65534 --clear-groups env COVE_RUNTIME_DIR=$nrt \
	"$WORK/bin/cove" doctor 2>&1 | grep network | grep -q 'unavailable: root no' &&
	ok "not root: doctor says networking is unavailable" || not_ok "not root doctor"
rm -rf "$nrt"
chmod 700 "$WORK"
finish
