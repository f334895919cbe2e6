#!/usr/bin/env bash
# cove-egress's credential injection without a VM (issue 15): the guest
# netns, sandbox netns and fake internet of test_egress_standalone, with an
# upstream (tests/integration/egress/echo.py) that answers what it received
# and whose HTTPS certificate comes from a test CA only the proxy trusts.
# Rules and secrets go in over the ctl socket ({"op":"proxy"}); the guest
# trusts the sandbox CA from the reply.  Checks injection and overwrite,
# splicing of hosts without a rule, path/method/header selection, plain
# HTTP ("schemes"), the log's [redacted], a refused bad change, removal, an
# upstream certificate that fails, and that the process is still confined.
# Issue 26: echo.py also routes by name (evil.test is the attacker's site,
# logged apart); a secret must follow the rule's host, never the guest's
# Host or absolute-form target, nor a dot-segment path out of match_paths.
source tests/integration/lib.sh
source tests/integration/egress/world.sh
egress_world cep
in_i ip addr add 198.51.100.53/24 dev in1
in_i ip link set in1 up
in_i ip link set lo up
in_i ip route add default via 198.51.100.254

# The test CA (only the proxy is told of it) and the upstream's certificate.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj /CN=cove-proxy-test-ca -keyout "$WORK/ca.key" -out "$WORK/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=api.test \
	-keyout "$WORK/srv.key" -out "$WORK/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:api.test,DNS:acct.test,DNS:free.test\n' >"$WORK/san.ext"
openssl x509 -req -in "$WORK/srv.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" -CAcreateserial \
	-days 2 -extfile "$WORK/san.ext" -out "$WORK/srv.pem" 2>/dev/null
mkdir -p "$WORK/www"
(exec ip netns exec $I python3 $D/echo.py 198.51.100.7 "$WORK/srv.pem" "$WORK/srv.key" \
	"$WORK/seen.log" "$WORK/www" "$WORK/echo.ready" >"$WORK/echo.err" 2>&1) &
pids+=($!)
in_i dnsmasq -k --conf-file=/dev/null --no-resolv --no-hosts --user=root \
	--listen-address=198.51.100.53 --bind-interfaces --pid-file="$WORK/dnsmasq.pid" \
	--address=/api.test/198.51.100.7 --address=/acct.test/198.51.100.7 \
	--address=/free.test/198.51.100.7 --log-facility="$WORK/dnsmasq.log" &
pids+=($!)
wait_for "$WORK/echo.ready" ready 30 || { not_ok "echo server: $(cat "$WORK/echo.err")"; finish; }

cat >"$WORK/config.json" <<JSON
{"guest":"172.16.0.2","gateway":"172.16.0.1","tap":"tap0","uplink":"up0",
 "host_addrs":["100.100.0.1"],"upstream":["198.51.100.53:53"],
 "policy":{"mode":"rules","allow":["free.test"]}}
JSON
CTL=$WORK/egress.sock
LOG=$WORK/egress.log
ready=$(nsenter -t $SB -U -n -m python3 $D/launch.py "$PWD/build/bin/cove-egress" \
	"$WORK/config.json" "$CTL" "$LOG" 18001 8000 "$WORK/egress.pid" 2>"$WORK/egress.err")
[ "$ready" = ok ] && ok "cove-egress is ready" || { not_ok "cove-egress: '$ready' $(cat "$WORK/egress.err")"; finish; }
EP=$(cat "$WORK/egress.pid")
TOK_A=tok-A-$RANDOM$RANDOM
TOK_B=tok-B-$RANDOM$RANDOM
CA_JSON=$(python3 -c 'import json,sys; print(json.dumps(open(sys.argv[1]).read()))' "$WORK/ca.pem")
RULES='{"secrets":{"A":{"env":"A"},"B":{"file":"/b"}},"rules":[
 {"name":"v1get","match_hosts":["api.test"],"match_paths":["/v1/"],"match_methods":["GET"],
  "headers":{"Authorization":"Bearer {{secrets.A}}","X-Extra":"x-{{secrets.B}}"}},
 {"name":"acct-a","match_hosts":["acct.test"],"match_headers":{"X-Account":"a"},
  "schemes":["https","http"],"headers":{"Authorization":"Bearer {{secrets.A}}"}},
 {"name":"acct-b","match_hosts":["*.acct.test","acct.test"],"match_headers":{"X-Account":"b"},
  "headers":{"Authorization":"Bearer {{secrets.B}}"}}]}'
proxy_req() { # RULES [CA_JSON]
	python3 -c 'import json,sys
r={"op":"proxy","rules":json.loads(sys.argv[1]),"secrets":{"A":sys.argv[2],"B":sys.argv[3]}}
if len(sys.argv)>4: r["upstream_ca"]=json.loads(sys.argv[4])
print(json.dumps(r))' "$@"
}
r=$(ctl "$(proxy_req "$RULES" "$TOK_A" "$TOK_B" "$CA_JSON")")
python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["ok"]; open(sys.argv[2],"w").write(o["ca"])' "$r" "$WORK/sandbox-ca.pem" &&
	ok "ctl proxy: ok, with the sandbox CA" || { not_ok "ctl proxy: $r"; finish; }
openssl x509 -in "$WORK/sandbox-ca.pem" -noout -text | grep -q 'prime256v1' &&
	openssl x509 -in "$WORK/sandbox-ca.pem" -noout -text | grep -q 'CA:TRUE' &&
	ok "the sandbox CA is P-256 and a CA" || not_ok "the CA: $(openssl x509 -in "$WORK/sandbox-ca.pem" -noout -text | head -20)"
# The guest's names, as cove-egress's resolver answers them (checked below);
# the proxy resolves them again itself.
RES=()
for n in api.test acct.test free.test; do
	for p in 80 443; do RES+=(--resolve "$n:$p:198.51.100.7"); done
done
gcurl() { in_g curl -s -m 10 "${RES[@]}" --cacert "$WORK/sandbox-ca.pem" "$@"; }
r=$(dns api.test)
[ "$r" = "NOERROR 198.51.100.7" ] && ok "DNS api.test (a rule's host, not in the policy): $r" || not_ok "DNS api.test: $r"
r=$(dns other.test)
[ "$r" = REFUSED ] && ok "DNS other.test (no rule, not allowed): REFUSED" || not_ok "DNS other.test: $r"
field() { python3 -c 'import json,sys
try: print(json.loads(sys.argv[1]).get(sys.argv[2]))
except Exception: print("unparsable:", sys.argv[1][:200])' "$1" "$2"; }

# Injection (the rule's hosts resolve although the policy names only free.test).
out=$(gcurl https://api.test/v1/me)
[ "$(field "$out" auth_sha256)" = "$(sha "Bearer $TOK_A")" ] && ok "https://api.test/v1/me: the upstream got Bearer A" ||
	not_ok "injection: $out $(tail -3 "$WORK/egress.err")"
grep -q "Bearer $TOK_A" "$WORK/seen.log" && grep -q "x-$TOK_B" "$WORK/seen.log" &&
	ok "the upstream's log has both injected headers" || not_ok "seen: $(tail -1 "$WORK/seen.log")"
out=$(gcurl -H 'Authorization: Bearer guest-own' -H 'authorization: second' https://api.test/v1/me)
[ "$(field "$out" auth_sha256)" = "$(sha "Bearer $TOK_A")" ] && [ "$(field "$out" n_auth)" = 1 ] &&
	ok "the guest's own Authorization headers are replaced" || not_ok "overwrite: $out"
alpn=$(gcurl -v -o /dev/null https://api.test/v1/me 2>&1 | grep -i 'ALPN.*accepted\|ALPN: server accepted' | head -1)
grep -q 'http/1.1' <<<"$alpn" && ok "ALPN to the guest: $alpn" || not_ok "ALPN: '$alpn'"
issuer=$(gcurl -v -o /dev/null https://api.test/v1/me 2>&1 | grep -i 'issuer:' | head -1)
grep -q 'Cove sandbox CA' <<<"$issuer" && ok "the guest sees a leaf from the sandbox CA ($issuer)" || not_ok "issuer: $issuer"
# Selection: path, method, headers.
out=$(gcurl https://api.test/v2/me)
[ "$(field "$out" n_auth)" = 0 ] && ok "match_paths: /v2/ gets nothing" || not_ok "/v2/: $out"
out=$(gcurl -X POST -d x=1 https://api.test/v1/me)
[ "$(field "$out" n_auth)" = 0 ] && [ "$(field "$out" body_len)" = 3 ] && ok "match_methods: POST gets nothing (body passed)" || not_ok "POST: $out"
out=$(gcurl -H 'X-Account: a' https://acct.test/)
[ "$(field "$out" auth_sha256)" = "$(sha "Bearer $TOK_A")" ] && ok "match_headers: account a gets secret A" || not_ok "acct a: $out"
out=$(gcurl -H 'X-Account: b' https://acct.test/)
[ "$(field "$out" auth_sha256)" = "$(sha "Bearer $TOK_B")" ] && ok "match_headers: account b gets secret B" || not_ok "acct b: $out"
out=$(gcurl -H 'X-Account: c' https://acct.test/)
[ "$(field "$out" n_auth)" = 0 ] && ok "match_headers: account c gets nothing" || not_ok "acct c: $out"
# Plain HTTP to a rule's host: a secret only where the rule says "schemes": ["http"].
out=$(in_g curl -s -m 10 "${RES[@]}" http://api.test/v1/me)
[ "$(field "$out" n_auth)" = 0 ] && [ "$(field "$out" tls)" = False ] && [ "$(field "$out" path)" = /v1/me ] &&
	ok "http://api.test/v1/me (port 80, no \"schemes\"): forwarded without the secret" || not_ok "plain http: $out"
out=$(in_g curl -s -m 10 "${RES[@]}" -H 'X-Account: a' http://acct.test/)
[ "$(field "$out" auth_sha256)" = "$(sha "Bearer $TOK_A")" ] && [ "$(field "$out" tls)" = False ] &&
	ok "http://acct.test/ (port 80, \"schemes\": [\"https\",\"http\"]): injected" || not_ok "plain http with schemes: $out"
# Issue 26: the secret follows the rule's host.  Positive control first.
out=$(gcurl https://api.test/v1/x)
[ "$(field "$out" auth_sha256)" = "$(sha "Bearer $TOK_A")" ] && [ "$(field "$out" host)" = api.test ] &&
	ok "https://api.test/v1/x: injected, Host api.test" || not_ok "control: $out"
out=$(gcurl -H 'Host: API.test:443' https://api.test/v1/x)
[ "$(field "$out" auth_sha256)" = "$(sha "Bearer $TOK_A")" ] && [ "$(field "$out" host)" = api.test ] &&
	ok "Host API.test:443 (the same name): injected, Cove writes Host: api.test" || not_ok "same host: $out"
c=$(gcurl -o "$WORK/r403" -w '%{http_code}' -H 'Host: evil.test' https://api.test/v1/x)
[ "$c" = 403 ] && ok "https://api.test/v1/x with Host: evil.test: 403 ($(cat "$WORK/r403"))" || not_ok "Host evil.test: $c $(cat "$WORK/r403" 2>/dev/null)"
c=$(gcurl -o /dev/null -w '%{http_code}' --request-target https://evil.test/v1/x https://api.test/)
[ "$c" = 403 ] && ok "absolute-form GET https://evil.test/v1/x over api.test's connection: 403" || not_ok "absolute form (api.test): $c"
c=$(gcurl -o /dev/null -w '%{http_code}' -H 'X-Account: a' --request-target https://evil.test/v1/x https://acct.test/)
[ "$c" = 403 ] && ok "absolute-form GET https://evil.test/v1/x over acct.test's connection: 403" || not_ok "absolute form: $c"
c=$(gcurl -o /dev/null -w '%{http_code}' -H 'X-Account: a' --request-target x://evil.test/ https://acct.test/)
[ "$c" = 403 ] && ok "absolute-form GET x://evil.test/ over acct.test's connection: 403" || not_ok "absolute x://: $c"
# raw_tls NAME HEAD: the status line for HEAD sent as it is (curl sends one Host only).
raw_tls() {
	in_g python3 -c 'import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[3])
with ctx.wrap_socket(socket.create_connection(("198.51.100.7", 443), 10), server_hostname=sys.argv[1]) as s:
    s.sendall(sys.argv[2].encode().decode("unicode_escape").encode())
    print(s.makefile("rb").readline().decode().strip())' "$1" "$2" "$WORK/sandbox-ca.pem" 2>&1
}
r=$(raw_tls acct.test 'GET / HTTP/1.1\r\nHost: acct.test\r\nHost: evil.test\r\nX-Account: a\r\n\r\n')
[ "$r" = "HTTP/1.1 403 Forbidden" ] && ok "two Host headers: $r" || not_ok "two Hosts: $r"
c=$(gcurl -o /dev/null -w '%{http_code}' -X TRACE -H 'X-Account: a' https://acct.test/)
[ "$c" = 403 ] && ok "TRACE (it would echo the secret back): 403" || not_ok "TRACE: $c"
out=$(gcurl --path-as-is https://api.test/v1/../admin)
[ "$(field "$out" n_auth)" = 0 ] && [ "$(field "$out" path)" = /admin ] &&
	ok "/v1/../admin: forwarded as /admin, without the secret" || not_ok "dot segments: $out"
c=$(gcurl --path-as-is -o /dev/null -w '%{http_code}' https://api.test/v1/%2e%2e/admin)
[ "$c" = 403 ] && ok "/v1/%2e%2e/admin: 403" || not_ok "encoded dots: $c"
touch "$WORK/seen.log.evil"
if grep -q '"auth_sha256": "' "$WORK/seen.log.evil"; then
	not_ok "evil.test got a secret: $(grep -c auth_sha256 "$WORK/seen.log.evil") request(s)"
else ok "evil.test's log has no Authorization ($(wc -l <"$WORK/seen.log.evil") requests)"; fi
if grep '"path": "[^"]*admin' "$WORK/seen.log" | grep -qi '"authorization"'; then
	not_ok "an /admin request reached the upstream with the secret"
else ok "no /admin request reached the upstream with an Authorization"; fi
sleep 0.2
grep -q "the request's Host is not the name the connection was made to" "$LOG" &&
	ok "egress.log says why Host evil.test was refused" || not_ok "no refusal line: $(grep -c '"allow":false' "$LOG")"
# A host without a rule: spliced, the upstream's own certificate.
out=$(in_g curl -s -m 10 "${RES[@]}" --cacert "$WORK/ca.pem" -H 'Authorization: guest' https://free.test/v1/me)
[ "$(field "$out" auth_sha256)" = "$(sha guest)" ] && ok "free.test (no rule): spliced, the guest's header untouched, the test CA's certificate verifies" ||
	not_ok "splice: $out"
issuer=$(in_g curl -s -m 10 "${RES[@]}" -k -v -o /dev/null https://free.test/ 2>&1 | grep -i 'issuer:' | head -1)
grep -q 'cove-proxy-test-ca' <<<"$issuer" && ok "free.test shows the upstream's own certificate ($issuer)" || not_ok "free issuer: $issuer"
c=$(in_g curl -s -m 10 "${RES[@]}" -o /dev/null -w '%{http_code}' --cacert "$WORK/sandbox-ca.pem" https://free.test/)
[ "$c" != 200 ] && ok "free.test does not verify with the sandbox CA (not intercepted)" || not_ok "free.test with the sandbox CA: $c"
# The log.
sleep 0.2
grep -q '"proxy_rule":"v1get","headers":"\[redacted\]"' "$LOG" && ok "the log names the rule with [redacted]" || not_ok "log: $(grep proxy_rule "$LOG" | head -2)"
grep -q '"rule":"proxy-rule:v1get"' "$LOG" && ok "the log says the rule's host was allowed by it" || not_ok "log allow: $(head -3 "$LOG")"
if grep -qF -e "$TOK_A" -e "$TOK_B" "$LOG" "$WORK/egress.err"; then not_ok "a secret in the egress log or stderr"; else ok "no secret in the egress log or stderr"; fi
# A bad change is refused and changes nothing.
r=$(ctl "$(proxy_req '{"rules":[{"name":"x","match_hosts":["api.test"],"headers":{"Authorization":"{{secrets.NOPE}}"}}]}' a b)")
grep -q '"ok":false.*unknown secret' <<<"$r" && ok "a reference to an unknown secret is refused: $r" || not_ok "bad rules: $r"
r=$(ctl "$(proxy_req '{"secrets":{"A":{"env":"A"}},"rules":[{"name":"x","match_hosts":["api.test"],"headers":{"Content-Length":"1"}}]}' a b)")
grep -q '"ok":false' <<<"$r" && ok "a framing header is refused: $r" || not_ok "framing: $r"
out=$(gcurl https://api.test/v1/me)
[ "$(field "$out" auth_sha256)" = "$(sha "Bearer $TOK_A")" ] && ok "after the refused changes the old rules still inject" || not_ok "after bad: $out"
# Under deny-by-default (mode none: not even DNS) a rule's hosts still go.
r=$(ctl '{"op":"policy","policy":{"mode":"none"}}')
[ "$r" = '{"ok":true}' ] || not_ok "policy none: $r"
r=$(dns api.test)
out=$(gcurl https://api.test/v1/me)
[ "$r" = "NOERROR 198.51.100.7" ] && [ "$(field "$out" auth_sha256)" = "$(sha "Bearer $TOK_A")" ] &&
	ok "mode none: a rule's host still resolves and is injected" || not_ok "mode none: DNS '$r', $out"
c=$(in_g curl -s -m 10 "${RES[@]}" -k -o /dev/null -w '%{http_code}' https://free.test/)
[ "$c" = 000 ] && ok "mode none: free.test (policy only) is refused" || not_ok "mode none free.test: $c"
# The host's bundle does not know the test CA: the server fails verification -> 502.
r=$(ctl "$(proxy_req "$RULES" "$TOK_A" "$TOK_B")")
grep -q '"ok":true' <<<"$r" || not_ok "rules without upstream_ca: $r"
c=$(gcurl -o "$WORK/502" -w '%{http_code}' https://api.test/v1/me)
[ "$c" = 502 ] && grep -q 'certificate' "$WORK/502" && ok "an upstream certificate that fails verification: 502 ($(cat "$WORK/502"))" || not_ok "verify: $c $(cat "$WORK/502" 2>/dev/null)"
# Removal: no rule, api.test is no destination any more.
r=$(ctl "$(proxy_req '{"rules":[]}' a b)")
grep -q '"ok":false' <<<"$r" && ok "values without a source are refused" || not_ok "extra values: $r"
r=$(ctl '{"op":"proxy","rules":{"rules":[]}}')
grep -q '"ok":true' <<<"$r" && ok "ctl proxy with no rules: $r" || not_ok "no rules: $r"
c=$(gcurl -o /dev/null -w '%{http_code}' https://api.test/v1/me)
[ "$c" = 000 ] && ok "after removal https://api.test is refused" || not_ok "after removal: $c"
# Still confined, still alive.
st=/proc/$EP/status
[ "$(awk '$1=="Seccomp:"{print $2}' $st)" = 2 ] && ok "cove-egress still runs under seccomp" || not_ok "egress: $(cat "$WORK/egress.err" | tail -3)"
[ "$FAILED" = 0 ] || { echo "--- cove-egress stderr"; cat "$WORK/egress.err"; echo "--- log"; tail -20 "$LOG"; }
finish
