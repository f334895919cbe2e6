#!/usr/bin/env bash
# Credential injection end to end (issue 15), Debian image: a rules file
# whose secrets come from a 0600 file and the launcher's environment; the
# guest's curl, Python requests and git reach https://api.test (a test CA
# only the proxy trusts) with the real token injected, its own header
# overwritten; free.test (no rule) is spliced with its own certificate;
# paths, methods and two placeholder accounts select; the secret's bytes are
# in no process's command line or environment, no file of the sandbox's
# directory (overlay, logs, rules), and no part of a snapshot taken after
# the requests (memory file, disks); a fork has its own CA and still
# injects; a runtime change takes effect for the next connection and an
# empty rules file stops injection; bad rules files are refused first.
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env
[ -f build/images/debian.ext4 ] || { echo "skip: debian image not built (make rootfs-debian)"; exit 77; }
fakenet_echo || exit 1
export COVE_IMAGE=$(stage debian.ext4 build/images/debian.ext4)

TOK_A=sk-cove-a-$(openssl rand -hex 16)
TOK_B=sk-cove-b-$(openssl rand -hex 16)
export COVE_TEST_TOK_B=$TOK_B
umask 077
printf '%s\n' "$TOK_A" >"$WORK/tok_a"
umask 022
sha "Bearer $TOK_A" >"$FAKENET/echo-www/.auth"
# A git repository for git's dumb HTTP protocol under https://api.test/git/.
rm -rf "$FAKENET/echo-www/repo.git" "$WORK/src"
git init -q -b main "$WORK/src"
echo "cloned through credential injection" >"$WORK/src/README"
git -C "$WORK/src" add README
git -C "$WORK/src" -c user.name=cove -c user.email=cove@test commit -q -m first
git clone -q --bare "$WORK/src" "$FAKENET/echo-www/repo.git"
git -C "$FAKENET/echo-www/repo.git" update-server-info

rules() { # FILE SECRET-FOR-v1get
	cat >"$1" <<JSON
{"upstream_ca": "$FAKENET_CA",
 "secrets": {"A": {"file": "tok_a"}, "B": {"env": "COVE_TEST_TOK_B"}},
 "rules": [
  {"name": "git", "match_hosts": ["api.test"], "match_paths": ["/git/"],
   "headers": {"Authorization": "Bearer {{secrets.A}}"}},
  {"name": "v1get", "match_hosts": ["api.test"], "match_paths": ["/v1/"], "match_methods": ["GET"],
   "headers": {"Authorization": "Bearer {{secrets.$2}}"}, "env_vars": {"GH_TOKEN": "dummy-gh"}},
  {"name": "acct-a", "match_hosts": ["acct.test"], "match_headers": {"X-Account": "a"},
   "headers": {"Authorization": "Bearer {{secrets.A}}"}},
  {"name": "acct-b", "match_hosts": ["acct.test"], "match_headers": {"X-Account": "b"},
   "headers": {"Authorization": "Bearer {{secrets.B}}"}}]}
JSON
}
rules "$WORK/rules.json" A
rules "$WORK/rules-b.json" B
echo '{"rules": []}' >"$WORK/rules-none.json"

# --- bad rules files: one clear line, nothing started ---
refused() { # WHAT FILE WANT
	local out
	out=$($cove start --name bad --net none --proxy-rules "$2" 2>&1 >/dev/null)
	if [ $? != 0 ] && grep -q -- "$3" <<<"$out" && [ "$(wc -l <<<"$out")" = 1 ] && [ ! -e "$COVE_RUNTIME_DIR/bad" ]; then
		ok "refused before start: $1 ($out)"
	else
		not_ok "$1: '$out'"
	fi
}
echo '{"rules": [' >"$WORK/bad1.json"
refused "a malformed file" "$WORK/bad1.json" "not JSON"
echo '{"rules": [{"name": "x", "headers": {"A": "b"}}]}' >"$WORK/bad2.json"
refused "a rule without hosts" "$WORK/bad2.json" 'no "match_hosts"'
echo '{"rules": [{"name": "x", "match_hosts": ["api.test"], "headers": {"A": "{{secrets.NOPE}}"}}]}' >"$WORK/bad3.json"
refused "an unknown secret" "$WORK/bad3.json" "unknown secret 'NOPE'"
echo '{"rules": [{"name": "x", "match_hosts": ["api.test"], "headers": {"Host": "a"}}]}' >"$WORK/bad4.json"
refused "a framing header" "$WORK/bad4.json" "cannot be injected"
cp "$WORK/tok_a" "$WORK/tok_open" && chmod 644 "$WORK/tok_open"
echo '{"secrets": {"A": {"file": "tok_open"}}, "rules": []}' >"$WORK/bad5.json"
refused "a secret file others can read" "$WORK/bad5.json" "chmod 600"
echo '{"secrets": {"A": {"env": "COVE_TEST_UNSET"}}, "rules": []}' >"$WORK/bad6.json"
refused "a secret from an unset variable" "$WORK/bad6.json" "has no COVE_TEST_UNSET"

# --- a sandbox with the rules ---
$cove start --name px --memory 512 --allow free.test --proxy-rules "$WORK/rules.json" >/dev/null 2>"$WORK/err" || {
	not_ok "start: $(cat "$WORK/err")"; finish; }
SB=$COVE_RUNTIME_DIR/px
field() { python3 -c 'import json,sys
try: print(json.loads(sys.argv[1]).get(sys.argv[2]))
except Exception: print("unparsable:", sys.argv[1][:300])' "$1" "$2"; }
injected() { # NAME WHAT CMD SECRET
	local out
	out=$(gx "$1" "$3")
	if [ "$(field "$out" auth_sha256)" = "$(sha "Bearer $4")" ] && [ "$(field "$out" n_auth)" = 1 ]; then ok "$2"; else
		not_ok "$2: $(head -c 400 <<<"$out")"; fi
}
nothing() { # NAME WHAT CMD
	local out
	out=$(gx "$1" "$3")
	if [ "$(field "$out" n_auth)" = 0 ]; then ok "$2"; else not_ok "$2: $(head -c 300 <<<"$out")"; fi
}
injected px "curl https://api.test/v1/me: the upstream got the real token" 'curl -sS https://api.test/v1/me' "$TOK_A"
injected px "the guest's own Authorization is overwritten" \
	'curl -sS -H "Authorization: Bearer guest-own" https://api.test/v1/me' "$TOK_A"
grep -qF "Bearer $TOK_A" "$FAKENET/seen.log" && ok "the upstream's own log has the token" || not_ok "seen.log lacks the token"
nothing px "match_paths: /v2/ gets nothing" 'curl -sS https://api.test/v2/me'
nothing px "match_methods: POST /v1/ gets nothing" 'curl -sS -X POST -d x=1 https://api.test/v1/me'
injected px "match_headers: account a gets secret A" 'curl -sS -H "X-Account: a" https://acct.test/' "$TOK_A"
injected px "match_headers: account b gets secret B" 'curl -sS -H "X-Account: b" https://acct.test/' "$TOK_B"
nothing px "plain http://api.test/v1/me (port 80, no \"schemes\": [\"http\"]) gets no secret" 'curl -sS http://api.test/v1/me'
works px "free.test (no rule) is spliced: the guest sees the upstream's own certificate" \
	'curl -sS -k -v -o /dev/null https://free.test/ 2>&1 | grep -i "issuer:"' 'cove-test-ca'
out=$(gx px 'curl -sS -k -H "Authorization: guest" https://free.test/v1/me')
[ "$(field "$out" auth_sha256)" = "$(sha guest)" ] && ok "free.test: the guest's header reaches it untouched" || not_ok "free.test: $out"
fast_fail px "free.test is not trusted through the sandbox CA (never intercepted)" \
	'curl -sS https://free.test/ 2>&1' 'certificate|SSL'
injected px "Python requests (no extra flags)" \
	'python3 -c "from pip._vendor import requests; print(requests.get(\"https://api.test/v1/me\").text)"' "$TOK_A"
works px "git clone https://api.test/git/repo.git (no extra flags; the server wants the token)" \
	'git clone -q https://api.test/git/repo.git /tmp/repo 2>&1 && cat /tmp/repo/README' 'cloned through credential injection'
works px "the guest's environment: the dummy, the CA variables" \
	'echo "$GH_TOKEN $SSL_CERT_FILE $REQUESTS_CA_BUNDLE $NODE_EXTRA_CA_CERTS $GIT_SSL_CAINFO"' \
	'^dummy-gh /run/cove/ca-bundle.crt /run/cove/ca-bundle.crt /run/cove/ca.pem /run/cove/ca-bundle.crt$'
works px "the system bundle holds the sandbox CA once" \
	'grep -c "cove sandbox CA: begin" /etc/ssl/certs/ca-certificates.crt' '^1$'
ca_px=$(gx px 'cat /run/cove/ca.pem')
grep -q 'BEGIN CERTIFICATE' <<<"$ca_px" && ! grep -q PRIVATE <<<"$ca_px" && ok "the guest has the CA's certificate and no key" || not_ok "ca: $ca_px"
$cove logs px --egress >"$WORK/elog" 2>&1
grep -q '"proxy_rule":"v1get","headers":"\[redacted\]"' "$WORK/elog" && ok "cove logs --egress: the rule's name and [redacted]" ||
	not_ok "egress log: $(grep -m2 api.test "$WORK/elog")"
grep -q '"rule":"proxy-rule:' "$WORK/elog" && ok "the log says the rule's host is allowed by the rule" || not_ok "no proxy-rule allow line"

# --- the secret is nowhere: processes, the sandbox's files, a snapshot ---
$cove snapshot px "$WORK/snap" 2>"$WORK/err" || not_ok "snapshot: $(cat "$WORK/err")"
pids=$(pgrep -f 'cove-vmm|cove-egress' | tr '\n' ' ')
hits=""
for p in $pids; do
	grep -qaF -e "$TOK_A" -e "$TOK_B" /proc/$p/cmdline /proc/$p/environ 2>/dev/null && hits+=" $p($(tr '\0' ' ' </proc/$p/cmdline | cut -c1-60))"
done
[ -n "$pids" ] && [ -z "$hits" ] && ok "no command line or environment holds a secret (pids $pids)" || not_ok "in processes:$hits"
ls "$WORK/snap" >"$WORK/snapfiles"
grep -q mem "$WORK/snapfiles" && ok "the snapshot has a memory file ($(tr '\n' ' ' <"$WORK/snapfiles"))" || not_ok "snapshot files: $(cat "$WORK/snapfiles")"
found=$(grep -rlaF -e "$TOK_A" -e "$TOK_B" "$SB" "$WORK/snap" 2>/dev/null)
searched=$( (find "$SB" "$WORK/snap" -type f | wc -l; du -sm "$SB" "$WORK/snap" | awk '{s+=$1} END {print s}') | tr '\n' ' ')
[ -z "$found" ] && ok "no file of the sandbox (overlay, console, VMM and egress logs, rules) or its snapshot (memory, disks) holds a secret ($searched files, MiB)" ||
	not_ok "secret found in: $found"
grep -q '"file"' "$SB/proxy-rules.json" && grep -q '{{secrets.A}}' "$WORK/snap/proxy-rules.json" &&
	ok "the sandbox and the snapshot keep the rules with references and sources" || not_ok "proxy-rules.json: $(cat "$SB/proxy-rules.json" 2>&1 | head -c 200)"

# --- a fork: its own CA, still injected ---
$cove fork "$WORK/snap" --count 1 --prefix pf >/dev/null 2>"$WORK/err" || not_ok "fork: $(cat "$WORK/err")"
ca_pf=$(gx pf-1 'cat /run/cove/ca.pem')
grep -q 'BEGIN CERTIFICATE' <<<"$ca_pf" && [ "$ca_pf" != "$ca_px" ] && ok "the fork has a CA of its own" || not_ok "fork CA: same or missing"
works pf-1 "the fork's bundle holds only its own CA" 'grep -c "cove sandbox CA: begin" /etc/ssl/certs/ca-certificates.crt' '^1$'
injected pf-1 "the fork's requests are injected" 'curl -sS https://api.test/v1/me' "$TOK_A"
grep -rlaF -e "$TOK_A" -e "$TOK_B" "$COVE_RUNTIME_DIR/pf-1" >/dev/null 2>&1 && not_ok "the fork's directory holds a secret" || ok "the fork's directory holds no secret"
$cove stop pf-1 >/dev/null

# --- runtime changes ---
out=$($cove net px --proxy-rules "$WORK/bad3.json" 2>&1)
[ $? != 0 ] && grep -q "unknown secret" <<<"$out" && ok "cove net with a bad rules file is refused: $out" || not_ok "cove net bad: $out"
injected px "and the rules in force still inject" 'curl -sS https://api.test/v1/me' "$TOK_A"
$cove net px --proxy-rules "$WORK/rules-b.json" 2>"$WORK/err" || not_ok "cove net rules-b: $(cat "$WORK/err")"
injected px "after cove net --proxy-rules, the next connection gets the new secret" 'curl -sS https://api.test/v1/me' "$TOK_B"
works px "free.test (the policy) is still allowed" 'curl -sS -k https://free.test/v1/me' '"n_auth"'
$cove net px --proxy-rules "$WORK/rules-none.json" 2>"$WORK/err" || not_ok "cove net none: $(cat "$WORK/err")"
n0=$(grep -c "$TOK_A\|$TOK_B" "$FAKENET/seen.log")
fast_fail px "with the rules removed api.test is no destination" 'curl -sS -m 20 https://api.test/v1/me 2>&1' 'resolve|[Rr]eset|REFUSED'
n1=$(grep -c "$TOK_A\|$TOK_B" "$FAKENET/seen.log")
[ "$n0" = "$n1" ] && ok "and the upstream saw no more tokens" || not_ok "tokens after removal: $n0 -> $n1"
grep -rlaF -e "$TOK_A" -e "$TOK_B" "$SB" >/dev/null 2>&1 && not_ok "after the changes the sandbox directory holds a secret" || ok "after the changes the sandbox directory holds no secret"
$cove stop px >/dev/null
finish
