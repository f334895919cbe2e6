# The network tests' fake internet (sourced after lib.sh; inside scripts/kvm-host).
#
# fakenet_up makes, once per emulated-host boot, a namespace `fakenet` joined
# to the host by the veth wan0 (host 203.0.113.1/24, fakenet 203.0.113.2/24)
# and routes 198.51.100.0/24 and 169.254.169.254 there.  In it run
# tests/integration/fakenet.py (HTTP, HTTPS from a test CA, TCP, UDP echo,
# "metadata") and dnsmasq for *.test at 198.51.100.53, which logs every query
# it receives to $FAKENET/dns.log.  Only these addresses are ever used.
# fake_egress_env serves the tests that need no fake internet: a stand-in
# cove-egress instead of the real one.
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
	for a in 198.51.100.80 198.51.100.43 198.51.100.44 198.51.100.90 198.51.100.91 198.51.100.53 169.254.169.254; do
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
		--address=/api.test/198.51.100.44 --address=/acct.test/198.51.100.44 \
		--address=/free.test/198.51.100.44 \
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

# fake_egress_env: cove_env with the stand-in cove-egress
# (build/itest/fake_egress, copied as cove-egress) for the tests of
# libcove's network set-up without the fake internet.  Needs root.
fake_egress_env() {
	cove_env
	need build/itest/fake_egress
	[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
	mkdir -p "$WORK/bin"
	cp build/itest/fake_egress "$WORK/bin/cove-egress"
	chmod 755 "$WORK/bin/cove-egress"
	export COVE_EGRESS=$WORK/bin/cove-egress COVE_DNS_UPSTREAM=198.51.100.53
}

# meta NAME: sandbox NAME's meta.json (nothing when it has none).
meta() { cat "$COVE_RUNTIME_DIR/$1/meta.json" 2>/dev/null; }

# links: the host's cv<K> links, one a line.
links() { ip -o link show | awk -F': ' '{print $2}' | grep '^cv' | sed 's/@.*//'; }

# dns_seen NAME: did the fake upstream receive a query for NAME?
dns_seen() {
	grep -qiF "query[A] $1 " "$FAKENET/dns.log" || grep -qiF "query[AAAA] $1 " "$FAKENET/dns.log"
}

# net_env: cove_env, the fake internet, and its DNS server as the upstream
# of every sandbox's resolver.  Skips where networking cannot be set up.
net_env() {
	cove_env
	[ "$(id -u)" = 0 ] || { echo "skip: sandbox networking needs root here"; exit 77; }
	need build/bin/cove-egress
	fakenet_up || exit 1
	export COVE_DNS_UPSTREAM=$FAKENET_DNS
}

# fast_fail NAME WHAT 'shell command' [WANT_REGEX]: the command must fail,
# within 15 s although it waits up to 30 s for an answer (a blocked
# connection is refused or reset, never left hanging), and its output must
# match WANT_REGEX (by default: an error that says refused, reset,
# unreachable or 403, not a time-out or a crash).
NET_REFUSED='[Rr]efused|[Cc]ouldn.t connect|[Rr]eset|[Uu]nreachable|[Nn]o route|[Pp]rohibited|REFUSED|403'
fast_fail() {
	local t0 t1 out rc secs
	t0=$(date +%s%N)
	out=$(gx "$1" "$3")
	rc=$?
	t1=$(date +%s%N)
	secs=$(((t1 - t0) / 1000000000))
	if [ "$rc" != 0 ] && [ "$secs" -lt 15 ] && grep -qE "${4:-$NET_REFUSED}" <<<"$out"; then
		ok "$2: refused in ${secs}s ($(head -n1 <<<"$out" | cut -c1-80))"
	else
		not_ok "$2: status $rc after ${secs}s: $(head -c 300 <<<"$out")"
	fi
}

# works NAME WHAT 'shell command' REGEX: the command succeeds and prints REGEX.
works() {
	local out
	out=$(gx "$1" "$3")
	if [ $? = 0 ] && grep -qE "$4" <<<"$out"; then ok "$2"; else
		not_ok "$2: $(head -c 300 <<<"$out")"
	fi
}

# conn_count SERVICE: connections the fake internet's SERVICE has seen.
conn_count() {
	grep -c "^$1 " "$FAKENET/conn.log" 2>/dev/null || true
}

# fakenet_repos: a package index at http://pypi.test/simple/ holding the
# wheel coveprobe 1.0, and a git repository at http://git.test/repo.git
# (git's dumb HTTP protocol), both served by the fake internet.
fakenet_repos() {
	local w=$FAKENET/www
	[ -e "$w/git.test/repo.git/info/refs" ] && return 0
	mkdir -p "$w/pypi.test/simple/coveprobe"
	python3 - "$w/pypi.test/simple/coveprobe/coveprobe-1.0-py3-none-any.whl" <<'PY'
import base64, hashlib, sys, zipfile
files = {
    "coveprobe/__init__.py": "MESSAGE = 'installed through the egress proxy'\n",
    "coveprobe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: coveprobe\nVersion: 1.0\n",
    "coveprobe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: cove-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("coveprobe-1.0.dist-info/RECORD,,")
    z.writestr("coveprobe-1.0.dist-info/RECORD", "\n".join(record) + "\n")
PY
	local src=$FAKENET/src
	rm -rf "$src"
	git init -q -b main "$src"
	echo "cloned through the egress proxy" >"$src/README"
	git -C "$src" add README
	git -C "$src" -c user.name=cove -c user.email=cove@test commit -q -m first
	git clone -q --bare "$src" "$w/git.test/repo.git"
	git -C "$w/git.test/repo.git" update-server-info
}

# fakenet_echo: the credential-injection tests' upstream on 198.51.100.44
# (tests/integration/egress/echo.py; api.test, acct.test, free.test): HTTP
# and HTTPS (a certificate from the test CA, which guests do not trust)
# answering what they received; full request headers go to $FAKENET/seen.log;
# /git/ serves $FAKENET/echo-www/ to the Authorization whose SHA-256 is in
# $FAKENET/echo-www/.auth.
fakenet_echo() {
	if [ -e "$FAKENET/echo.ready" ] && [ -e "$FAKENET/echo.pid" ] && kill -0 "$(cat "$FAKENET/echo.pid")" 2>/dev/null; then
		return 0
	fi
	mkdir -p "$FAKENET/echo-www"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=api.test \
		-keyout "$FAKENET/echo.key" -out "$FAKENET/echo.csr" 2>/dev/null
	printf 'subjectAltName=DNS:api.test,DNS:acct.test,DNS:free.test\n' >"$FAKENET/echo.ext"
	openssl x509 -req -in "$FAKENET/echo.csr" -CA "$FAKENET_CA" -CAkey "$FAKENET/ca.key" \
		-CAcreateserial -days 2 -extfile "$FAKENET/echo.ext" -out "$FAKENET/echo.pem" 2>/dev/null
	: >"$FAKENET/seen.log"
	ip netns exec fakenet setsid python3 tests/integration/egress/echo.py 198.51.100.44 \
		"$FAKENET/echo.pem" "$FAKENET/echo.key" "$FAKENET/seen.log" "$FAKENET/echo-www" \
		"$FAKENET/echo.ready" >"$FAKENET/echo.out" 2>&1 </dev/null &
	echo $! >"$FAKENET/echo.pid"
	wait_for "$FAKENET/echo.ready" ready 60 || {
		echo "fakenet: the echo server did not start: $(tail -n 5 "$FAKENET/echo.out")" >&2
		return 1
	}
}
