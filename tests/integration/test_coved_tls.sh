#!/usr/bin/env bash
# coved's TCP listener and tenants without a VM (runs as root, no
# /dev/kvm): with tls_cert/tls_key it serves the API over HTTPS (curl
# --cacert) and a plain-HTTP request on that port gets no answer; a key
# file readable by others, a missing certificate, a file that is no
# certificate and a key of another certificate each stop coved with one
# line; a client that sends no request head within header_timeout_s is
# dropped; a third connection from one address over
# max_connections_per_ip 2 is refused; with two tenants, each lists only
# its own, and the tenant whose quota is 0 gets 429 with Retry-After;
# cove doctor says "2 tenants, TCP listener: TLS".
source tests/integration/lib.sh
need "$BIN/coved" "$BIN/cove"
command -v openssl >/dev/null || { echo "skip: no openssl"; exit 77; }
KEYA=coved-tls-key-a-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
KEYB=coved-tls-key-b-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf 'alice:%s\nbob:%s\n' "$KEYA" "$KEYB" >"$WORK/keys"
chmod 600 "$WORK/keys"
mkdir -p "$WORK/images"
: >"$WORK/images/minimal.ext4" # resolves "base"; no VM boots here
export COVE_IMAGES=$WORK/images
PORT=$((20000 + RANDOM % 20000))
SOCK=$WORK/coved.sock
PID=
trap 'stop; rm -rf "$WORK"' EXIT

stop() {
	[ -n "$PID" ] || return 0
	kill "$PID" 2>/dev/null
	wait "$PID" 2>/dev/null
	PID=
}
# run_coved EXTRA_JSON: coved in the foreground; 0 once the socket is there.
run_coved() {
	python3 - "$WORK/coved.json" "{${1:-}}" <<PY || return 1
import json, sys
c = {"socket": "$SOCK", "state_dir": "$WORK/state", "api_keys_file": "$WORK/keys",
     "network": False, "templates_dir": None, "tcp": "127.0.0.1:$PORT"}
c.update(json.loads(sys.argv[2]))
json.dump(c, open(sys.argv[1], "w"))
PY
	rm -f "$SOCK"
	: >"$WORK/coved.log"
	$BIN/coved --config "$WORK/coved.json" --foreground >"$WORK/coved.log" 2>&1 &
	PID=$!
	local i
	for i in $(seq 100); do
		[ -S "$SOCK" ] && return 0
		kill -0 "$PID" 2>/dev/null || { wait "$PID"; PID=; return 1; }
		sleep 0.1
	done
	return 1
}
# refused EXTRA WHAT PATTERN: coved will not start, saying PATTERN in one line.
refused() {
	if run_coved "$1"; then not_ok "$2: coved started"; stop; return; fi
	local lines; lines=$(grep -c . "$WORK/coved.log")
	if grep -q -- "$3" "$WORK/coved.log" && [ "$lines" -le 2 ]; then ok "$2: $(grep -- "$3" "$WORK/coved.log")"
	else not_ok "$2: $(cat "$WORK/coved.log")"; fi
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=coved-test -addext subjectAltName=IP:127.0.0.1 \
	-keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=other -keyout "$WORK/key2.pem" -out "$WORK/cert2.pem" 2>/dev/null
chmod 600 "$WORK/key.pem" "$WORK/key2.pem"
TLS="\"tls_cert\": \"$WORK/cert.pem\", \"tls_key\": \"$WORK/key.pem\""

# ---- refusals ----
chmod 644 "$WORK/key.pem"
refused "$TLS" "a tls_key readable by others" "readable by others"
chmod 600 "$WORK/key.pem"
refused "\"tls_cert\": \"$WORK/nope.pem\", \"tls_key\": \"$WORK/key.pem\"" "a missing tls_cert" "tls_cert $WORK/nope.pem: No such file"
printf -- '-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n' >"$WORK/bad.pem"
refused "\"tls_cert\": \"$WORK/bad.pem\", \"tls_key\": \"$WORK/key.pem\"" "a tls_cert that is no certificate" "not a PEM certificate"
refused "\"tls_cert\": \"$WORK/cert2.pem\", \"tls_key\": \"$WORK/key.pem\"" "a key of another certificate" "is not the key of"
refused "\"tls_cert\": \"$WORK/cert.pem\"" "tls_cert without tls_key" "go together"
refused "$TLS, \"tcp\": null" "tls_cert without a TCP listener" "no \"tcp\" listener"

# ---- HTTPS ----
run_coved "$TLS, \"tenants\": {\"bob\": {\"max_sandboxes\": 0}}" || { not_ok "coved with TLS starts: $(cat "$WORK/coved.log")"; finish; }
# The line comes just after the socket: wait for it.
for i in $(seq 50); do grep -q serving "$WORK/coved.log" && break; sleep 0.1; done
grep -q "127.0.0.1:$PORT (TLS), 2 tenants" "$WORK/coved.log" && ok "coved says: $(grep serving "$WORK/coved.log")" || not_ok "start line: $(cat "$WORK/coved.log")"
c=$(curl -s --max-time 10 --cacert "$WORK/cert.pem" -H "X-API-KEY: $KEYA" -o "$WORK/b" -w '%{http_code}' "https://127.0.0.1:$PORT/v2/sandboxes")
[ "$c" = 200 ] && [ "$(cat "$WORK/b")" = "[]" ] && ok "HTTPS with --cacert -> 200 []" || not_ok "HTTPS: $c $(cat "$WORK/b")"
c=$(curl -s --max-time 10 -H "X-API-KEY: $KEYA" -o "$WORK/b" -w '%{http_code}' "https://127.0.0.1:$PORT/v2/sandboxes")
[ "$c" = 000 ] && ok "HTTPS without the CA: the certificate is not trusted" || not_ok "untrusted HTTPS answered $c"
rm -f "$WORK/b"
c=$(curl -s --max-time 10 -H "X-API-KEY: $KEYA" -o "$WORK/b" -w '%{http_code}' "http://127.0.0.1:$PORT/v2/sandboxes")
[ "$c" = 000 ] && ! grep -qs '\[' "$WORK/b" && ok "plain HTTP on the TLS port gets no API answer" || not_ok "plain HTTP: $c $(cat "$WORK/b")"
c=$(curl -s --max-time 10 --cacert "$WORK/cert.pem" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$PORT/v2/sandboxes")
[ "$c" = 401 ] && ok "HTTPS without a key -> 401" || not_ok "no key over HTTPS: $c"

# ---- tenants (no VM: bob's quota is checked before any boot) ----
c=$(curl -s --max-time 10 --cacert "$WORK/cert.pem" -H "X-API-KEY: $KEYB" -D "$WORK/h" -o "$WORK/b" -w '%{http_code}' \
	-X POST -H 'Content-Type: application/json' --data-binary '{"templateID":"base"}' "https://127.0.0.1:$PORT/v2/sandboxes")
[ "$c" = 429 ] && grep -qi '^retry-after: [0-9]' "$WORK/h" && grep -q 'tenant bob holds 0 of its 0 sandboxes' "$WORK/b" &&
	ok "bob's create over max_sandboxes 0 -> 429 with Retry-After: $(cat "$WORK/b")" || not_ok "bob's quota: $c $(cat "$WORK/b")"
c=$(curl -s --max-time 10 --unix-socket "$SOCK" -H "X-API-KEY: $KEYA" -o "$WORK/b" -w '%{http_code}' \
	-X POST --data-binary '{"templateID":"base"}' http://coved/v2/sandboxes)
[ "$c" != 429 ] && ok "alice's create is not refused by bob's quota ($c: the image is an empty file)" || not_ok "alice refused: $(cat "$WORK/b")"
curl -s --unix-socket "$SOCK" -H "X-API-KEY: $KEYA" http://coved/metrics | grep -q 'coved_limit_hits_total{limit="tenant"} 1' &&
	ok "/metrics counts the tenant limit hit" || not_ok "tenant limit metric"

# ---- cove doctor ----
out=$(COVED_CONFIG=$WORK/coved.json $BIN/cove doctor 2>&1)
line=$(echo "$out" | grep -E '^[a-z]+ +coved ')
[[ $line == *"2 tenants, TCP listener: TLS on 127.0.0.1:$PORT"* ]] && ok "cove doctor: $line" || not_ok "cove doctor: $line"
stop

# ---- header timeout and per-address limit (plain TCP) ----
run_coved '"header_timeout_s": 2, "max_connections_per_ip": 2' || { not_ok "plain coved starts"; finish; }
out=$($BIN/coved --config "$WORK/coved.json" --check 2>&1)
[[ $out == "2 tenants, TCP listener: plain HTTP on 127.0.0.1:$PORT"*cleartext* ]] && ok "coved --check (cove doctor's line) warns: $out" || not_ok "coved --check plain: $out"
r=$(python3 - "$PORT" "$SOCK" <<'PY'
import socket, sys, time
def slow(s):
    s.settimeout(10)
    s.send(b"GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\n")  # no end of head
    t = time.time()
    try:
        d = s.recv(100)
    except Exception as e:
        d = b"<%s>" % type(e).__name__.encode()
    return "%s after %.1fs" % ("closed" if d == b"" else "got %r" % d[:40], time.time() - t)
print("tcp:", slow(socket.create_connection(("127.0.0.1", int(sys.argv[1])))))
u = socket.socket(socket.AF_UNIX); u.connect(sys.argv[2])
print("unix:", slow(u))
PY
)
echo "$r" | sed 's/^/  /'
if echo "$r" | grep -q '^tcp: closed after [1-4]\.' && echo "$r" | grep -q '^unix: closed after [1-4]\.'; then
	ok "a client without its request head is dropped after header_timeout_s 2"; else not_ok "header timeout: $r"; fi
r=$(python3 - "$PORT" "$KEYA" <<'PY'
import socket, sys, time
port, key = int(sys.argv[1]), sys.argv[2]
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port)); s.settimeout(5)
s.send(b"GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + key.encode() + b"\r\n\r\n")
try:
    d = s.recv(100)
except Exception as e:
    d = b"<%s>" % type(e).__name__.encode()
print("third:", "refused" if d == b"" or d == b"<ConnectionResetError>" else d[:40])
for h in held: h.close()
time.sleep(0.5)
s = socket.create_connection(("127.0.0.1", port)); s.settimeout(5)
s.send(b"GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + key.encode() + b"\r\n\r\n")
print("after:", s.recv(12))
PY
)
echo "$r" | sed 's/^/  /'
if echo "$r" | grep -q '^third: refused' && echo "$r" | grep -q "^after: b'HTTP/1.1 200"; then
	ok "max_connections_per_ip 2: a third connection is refused, one after is served"; else not_ok "per-IP limit: $r"; fi
c=$(curl -s --max-time 10 -H "X-API-KEY: $KEYB" -o "$WORK/b" -w '%{http_code}' "http://127.0.0.1:$PORT/v2/sandboxes")
[ "$c" = 200 ] && ok "a request with its head in time is served (plain TCP)" || not_ok "plain TCP: $c"
stop
finish
