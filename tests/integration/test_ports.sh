#!/usr/bin/env bash
# A sandbox's ports through coved (issue 32), with the unmodified e2b SDK
# (tests/e2b/ports.mjs, pinned by tests/e2b/package-lock.json): coved
# serves TLS on 10.77.0.1:443 with "domain": "cove.test", and a dnsmasq in
# a network namespace of its own answers *.cove.test with that address
# (Node runs in a mount namespace whose /etc/resolv.conf names it).
# ports.mjs checks, through E2b-Sandbox-Port and then by host name:
# python3 -m http.server, a websocket echo, server-sent events as they
# come, 502 within a second for a port with nothing listening, another
# tenant's key or token answered 404, a sandbox created with public traffic
# restricted reachable only with its traffic token, and envd by host name.
# Here: plain HTTP by host name on the Unix socket, `cove port` and
# `cove run --publish` (both through the agent, no NIC), coved's port
# counters.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
NODE=${NODE:-/usr/bin/node}
[ -x "$NODE" ] || { echo "skip: no $NODE"; exit 77; }
[ -d tests/e2b/node_modules/e2b ] || { echo "skip: tests/e2b/node_modules is missing"; exit 77; }
[ -f build/images/debian.ext4 ] || { echo "skip: debian image not built (make rootfs-debian)"; exit 77; }
for t in dnsmasq openssl ip unshare curl; do
	command -v $t >/dev/null || { echo "skip: no $t"; exit 77; }
done
coved_env
ln -sf "$(stage_shared debian.ext4 build/images/debian.ext4)" "$WORK/images/debian.ext4"
KEYA=ports-key-a-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
KEYB=ports-key-b-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf 'a:%s\nb:%s\n' "$KEYA" "$KEYB" >"$WORK/keys"
KEY=$KEYA # api()'s

NS=coveports$$
ports_cleanup() {
	[ -f "$WORK/dnsmasq.pid" ] && kill "$(cat "$WORK/dnsmasq.pid")" 2>/dev/null
	[ -n "${CP_PID:-}" ] && kill "$CP_PID" 2>/dev/null
	ip link del ptd0 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	coved_cleanup
}
trap ports_cleanup EXIT

# ---- the test domain: dnsmasq in its own namespace, *.cove.test -> coved ----
ip netns add "$NS" &&
	ip link add ptd0 type veth peer name ptd1 netns "$NS" &&
	ip addr add 10.77.0.1/30 dev ptd0 && ip link set ptd0 up &&
	ip -n "$NS" addr add 10.77.0.2/30 dev ptd1 && ip -n "$NS" link set ptd1 up &&
	ip -n "$NS" link set lo up &&
	ip netns exec "$NS" dnsmasq --no-resolv --no-hosts --bind-interfaces \
		--listen-address=10.77.0.2 --address=/cove.test/10.77.0.1 \
		--pid-file="$WORK/dnsmasq.pid" --log-queries --log-facility="$WORK/dns.log" ||
	{ not_ok "the test domain's namespace and dnsmasq"; finish; }
printf 'nameserver 10.77.0.2\n' >"$WORK/resolv.conf"

# ---- a CA and coved's certificate for cove.test, *.cove.test, 10.77.0.1 ----
(cd "$WORK" &&
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj /CN=cove-ports-ca -keyout ca.key -out ca.pem &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=cove.test \
		-keyout srv.key -out srv.csr &&
	printf 'subjectAltName=DNS:cove.test,DNS:*.cove.test,IP:10.77.0.1\nextendedKeyUsage=serverAuth\n' >san.ext &&
	openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
		-extfile san.ext -out srv.pem && chmod 600 srv.key) >/dev/null 2>&1 ||
	{ not_ok "test certificates"; finish; }

coved_start "\"tcp\": \"10.77.0.1:443\", \"tls_cert\": \"$WORK/srv.pem\", \"tls_key\": \"$WORK/srv.key\",
	\"domain\": \"cove.test\", \"memory_mib\": 256" || { not_ok "coved starts"; finish; }
ok "coved on $SOCK and https://10.77.0.1 (*.cove.test)"

# ---- the SDK's checks (Node's resolver: the test's dnsmasq) ----
t0=$(date +%s)
(cd tests/e2b && KEYA=$KEYA KEYB=$KEYB API=https://api.cove.test SBXURL=https://10.77.0.1 \
	DOMAIN=cove.test TEMPLATE=debian NODE_EXTRA_CA_CERTS=$WORK/ca.pem \
	env -u E2B_SANDBOX_URL -u E2B_API_URL -u E2B_DOMAIN -u E2B_DEBUG \
	timeout 600 unshare -m sh -c 'mount --bind "$1" /etc/resolv.conf && exec "$2" ports.mjs' \
	sh "$WORK/resolv.conf" "$NODE") >"$WORK/node.out" 2>"$WORK/node.err"
rc=$?
while IFS= read -r line; do
	case "$line" in
	"ok - "*) ok "${line#ok - }" ;;
	"not ok - "*) not_ok "${line#not ok - }" ;;
	"ids "*) read -r _ IDA IDB <<<"$line" ;;
	esac
done <"$WORK/node.out"
[ "$rc" = 0 ] && [ -n "${IDA:-}" ] || not_ok "ports.mjs (status $rc): $(tail -5 "$WORK/node.err")"
echo "# ports.mjs took $(($(date +%s) - t0)) s"
grep -q 'query\[A\] 8000-.*\.cove\.test' "$WORK/dns.log" && ok "*.cove.test names were asked of the test's dnsmasq" ||
	not_ok "no query for 8000-<id>.cove.test in $WORK/dns.log"
[ -n "${IDA:-}" ] || finish

# ---- plain HTTP by host name (the Unix socket) ----
out=$(curl -s --max-time 30 --unix-socket "$SOCK" -H "Host: 8000-$IDA.cove.test" http://x/index.html)
[ "$out" = port-8000-ok ] && ok "plain HTTP, Host: 8000-<id>.cove.test" || not_ok "plain HTTP by host name: $out"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 --unix-socket "$SOCK" \
	-H "Host: 8000-zzzzzzzzzzzzzzzzzzzz.cove.test" http://x/)
[ "$code" = 404 ] && ok "an unknown sandbox by host name: 404" || not_ok "unknown sandbox by host name: $code"

# ---- cove port: a local listener through the agent ----
$cove port "$IDA" 8000 --listen 127.0.0.1:0 >"$WORK/cp.out" 2>"$WORK/cp.err" &
CP_PID=$!
until_true 30 'grep -q " on 127.0.0.1:" "$WORK/cp.out"'
lport=$(sed -n 's/.* on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$WORK/cp.out")
out=$(curl -s --max-time 30 "http://127.0.0.1:${lport:-1}/index.html")
[ "$out" = port-8000-ok ] && ok "cove port $IDA 8000 -> 127.0.0.1:$lport" ||
	not_ok "cove port: '$out' $(cat "$WORK/cp.out" "$WORK/cp.err")"
kill "$CP_PID"
wait "$CP_PID"
[ $? = 0 ] && ok "cove port ends on SIGTERM with 0" || not_ok "cove port's status on SIGTERM"
CP_PID=

# ---- cove run --publish alone: through the agent, no NIC ----
PUB=$((20000 + RANDOM % 20000))
$cove run --publish "127.0.0.1:$PUB:8080" -- sh -c \
	'mkdir -p /tmp/w && echo published > /tmp/w/index.html && httpd -f -p 8080 -h /tmp/w & sleep 20; ls /sys/class/net' \
	>"$WORK/run.out" 2>"$WORK/run.err" &
RUN_PID=$!
if until_true 60 '[ "$(curl -s --max-time 5 http://127.0.0.1:$PUB/index.html)" = published ]'; then
	ok "cove run --publish 127.0.0.1:$PUB:8080 reaches the guest's httpd"
else
	not_ok "cove run --publish: $(cat "$WORK/run.err")"
fi
wait "$RUN_PID"
grep -qx eth0 "$WORK/run.out" && not_ok "cove run --publish alone gave the guest a NIC" ||
	ok "cove run --publish alone: no NIC in the guest ($(tr '\n' ' ' <"$WORK/run.out"))"

# ---- coved counted them ----
n=$(metric coved_port_requests_total)
e=$(metric coved_port_errors_total)
[ "${n:-0}" -ge 10 ] && [ "${e:-0}" -ge 3 ] && ok "coved_port_requests_total $n, coved_port_errors_total $e" ||
	not_ok "port metrics: requests ${n:-none}, errors ${e:-none}"
finish
