#!/usr/bin/env bash
# Domain rules go through the egress proxy: --allow allowed.test lets HTTP
# to allowed.test through, while other.test on the same address gets 403,
# and HTTPS whose SNI is other.test is reset; HTTPS with SNI secure.test
# passes when allowed, end to end (the test CA's certificate is checked).
source tests/integration/lib.sh
source tests/integration/netlib.sh
net_env

$cove start --name dm --allow allowed.test --allow secure.test >/dev/null 2>"$WORK/err" || {
	not_ok "start: $(cat "$WORK/err")"; finish; }
works dm "http://allowed.test works" 'timeout 30 wget -q -O- http://allowed.test/' '^fake:allowed.test$'
fast_fail dm "http://other.test (same address) gets 403" \
	'echo 198.51.100.80 other.test >> /etc/hosts; timeout 30 wget -q -O- http://other.test/ 2>&1; timeout 30 wget -S -O- http://other.test/ 2>&1' '403'
fast_fail dm "HTTPS with SNI other.test is reset" \
	'timeout 30 wget -q -O- --no-check-certificate https://other.test/' '[Rr]eset|EOF|closed'
works dm "HTTPS to secure.test passes the proxy untouched" \
	'timeout 30 wget -q -O- --no-check-certificate https://secure.test/' '^fake:secure.test$'
fast_fail dm "a direct address is not a domain rule" 'timeout 30 wget -q -O- http://198.51.100.90:9000/'
$cove stop dm >/dev/null
finish
