#!/usr/bin/env bash
# The web console (docs/console.md), through a real browser: Debian's
# chromium driven by puppeteer-core (tests/ui, pinned; nothing downloaded
# here) against one coved with a TCP listener and networking on.  The e2b
# SDK (tests/e2b/console.mjs) makes tenant A's two sandboxes: one runs
# commands (a <script> among them), writes a file and files named as
# markup, has markup in its metadata and tries a connection its policy
# denies.  The browser (tests/ui/console.mjs) signs in with A's key, finds
# both, opens the first: its commands in the journal with the chain
# verified, the file in the diff, its content in the viewer and its bytes
# downloaded, the denied connection in the egress log, live CPU numbers and
# uPlot's CPU, memory, disk and network charts with data; types `echo
# hi-from-ui` in the xterm.js terminal and reads it back, finds its shell in
# the process list; pauses it, and the SDK then sees it paused.  No dialog fires, no CSP violation; hostile text shows as
# written.  Tenant B's key sees neither sandbox, and every console call for
# A's sandbox with it is 404.  The same coved holds 2,000 synthetic
# sandboxes of a third tenant (COVED_TEST_SYNTHETIC_SANDBOXES, no VMs):
# their first page renders, the time is printed as a bench line.
# Screenshots of each view go to build/console-shots/ (paths printed).
source tests/integration/lib.sh
source tests/integration/netlib.sh
source tests/integration/coved_lib.sh
NODE=${NODE:-/usr/bin/node}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$NODE" ] || { echo "skip: no $NODE"; exit 77; }
[ -x "$CHROMIUM" ] || { echo "skip: no $CHROMIUM (scripts/install-deps installs Debian's chromium)"; exit 77; }
[ -d tests/e2b/node_modules/e2b ] || { echo "skip: tests/e2b/node_modules is missing (scripts/install-deps)"; exit 77; }
[ -d tests/ui/node_modules/puppeteer-core ] || { echo "skip: tests/ui/node_modules is missing (scripts/install-deps)"; exit 77; }
net_env
coved_env
KEY_B=console-b-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
KEY_S=console-s-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf 'tenant-b:%s\nsynth:%s\n' "$KEY_B" "$KEY_S" >>"$WORK/keys"
SYNTH_N=2000
PORT=$((20000 + RANDOM % 20000))
export COVED_TEST_SYNTHETIC_SANDBOXES=$SYNTH_N COVED_TEST_SYNTHETIC_TENANT=synth
coved_start "\"tcp\": \"127.0.0.1:$PORT\", \"network\": true, \"max_sandboxes\": $((SYNTH_N + 16))" || { not_ok "coved starts"; finish; }
unset COVED_TEST_SYNTHETIC_SANDBOXES COVED_TEST_SYNTHETIC_TENANT
grep -q "TEST MODE: $SYNTH_N synthetic sandboxes" "$WORK/coved.log" && ok "coved on 127.0.0.1:$PORT with $SYNTH_N synthetic sandboxes" ||
	not_ok "coved did not say it holds synthetic sandboxes"
export E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT E2B_API_KEY=$KEY

# The console's files and headers, without a key.
hdr=$(curl -s -D- -o "$WORK/index.html" "http://127.0.0.1:$PORT/ui/")
if grep -qi "^content-security-policy: default-src 'self'.*frame-ancestors 'none'" <<<"$hdr" &&
	grep -qi '^x-content-type-options: nosniff' <<<"$hdr" && grep -q 'console.js' "$WORK/index.html" &&
	! grep -q '<script>' "$WORK/index.html"; then
	ok "/ui/ is served from coved with its CSP, no inline script"
else
	not_ok "/ui/: $(head -c 400 <<<"$hdr")"
fi
gz=0 raw=0 vendor=0
for f in index.html console.js console.css uplot.js uplot.css xterm.js xterm.css; do
	n=$(curl -s -H 'Accept-Encoding: gzip' -o /dev/null -w '%{http_code} %{size_download}' "http://127.0.0.1:$PORT/ui/$f")
	[ "${n% *}" = 200 ] || continue
	case $f in uplot.* | xterm.*) vendor=$((vendor + 1)) ;; esac
	gz=$((gz + ${n#* }))
	raw=$((raw + $(curl -s -o /dev/null -w '%{size_download}' "http://127.0.0.1:$PORT/ui/$f")))
done
echo "bench: {\"console_asset_bytes\": $raw, \"console_asset_bytes_gzip\": $gz}"
# uPlot and xterm.js (daemon/ui/node_modules, scripts/install-deps) are in
# this coved: the browser's checks below need them.
[ "$vendor" = 4 ] && ok "coved serves uPlot and xterm.js ($gz bytes gzipped, all of the console)" ||
	not_ok "coved was built without uPlot and xterm.js ($vendor of 4 files): npm ci in daemon/ui, then make"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-KEY: $KEY" "http://127.0.0.1:$PORT/v2/sandboxes")" = 200 ] &&
	curl -s -D- -o /dev/null -H "X-API-KEY: $KEY" "http://127.0.0.1:$PORT/v2/sandboxes" | grep -qi '^cache-control: no-store' &&
	ok "API answers carry Cache-Control: no-store" || not_ok "no Cache-Control: no-store on an API answer"

# Tenant A's sandboxes, through the SDK.
if ! ids=$(cd tests/e2b && timeout 200 "$NODE" console.mjs setup 2>"$WORK/setup.err"); then
	not_ok "SDK setup: $(tail -5 "$WORK/setup.err")"
	finish
fi
SB_A=$(jget "$ids" 'o["a"]')
SB_B=$(jget "$ids" 'o["b"]')
ok "the SDK made $SB_A (commands, files, a denied connection) and $SB_B (at $SECONDS s)"

# The console's own routes, by curl: counts, the last hour (per tenant),
# the list's template and metadata filters.
U=http://127.0.0.1:$PORT
c=$(curl -s -H "X-API-KEY: $KEY_S" "$U/sandboxes/counts")
[ "$(jget "$c" 'o["paused"]')" = "$SYNTH_N" ] && [ "$(jget "$c" 'o["running"]')" = 0 ] &&
	ok "GET /sandboxes/counts: the synthetic tenant's $SYNTH_N paused" || not_ok "counts: $c"
curl -s -o /dev/null -H "X-API-KEY: $KEY" "$U/sandboxes/$SB_A/logs" # folds its egress decisions in
h=$(curl -s -H "X-API-KEY: $KEY" "$U/sandboxes/hour")
hb=$(curl -s -H "X-API-KEY: $KEY_B" "$U/sandboxes/hour")
if [ "$(jget "$h" 'o["creates"] >= 2 and o["firstExecMs"]["n"] >= 1 and o["egressDenied"] >= 1 and len(o["minutes"]) == 60')" = True ] &&
	[ "$(jget "$hb" 'o["creates"] == 0 and o["firstExecMs"]["n"] == 0 and o["firstExecMs"]["p50"] is None')" = True ]; then
	ok "GET /sandboxes/hour: A's creates, first command (p50 $(jget "$h" 'o["firstExecMs"]["p50"]') ms) and denial; none for B"
else
	not_ok "hour: A $(head -c 300 <<<"$h"), B $(head -c 200 <<<"$hb")"
fi
n_t=$(jget "$(curl -s -H "X-API-KEY: $KEY_S" "$U/v2/sandboxes?limit=100&template=synthetic")" 'len(o)' 2>/dev/null || echo x)
n_b=$(jget "$(curl -s -H "X-API-KEY: $KEY_S" "$U/v2/sandboxes?template=base")" 'len(o)' 2>/dev/null || echo x)
m=$(curl -s -H "X-API-KEY: $KEY_S" "$U/v2/sandboxes?metadata=synthetic%3D7")
[ "$n_t" = 100 ] && [ "$n_b" = 0 ] && [ "$(jget "$m" '[s["metadata"]["synthetic"] for s in o]')" = "['7']" ] &&
	ok "GET /v2/sandboxes filters by template (a page of 100 synthetic, none of base) and metadata" ||
	not_ok "list filters: template synthetic $n_t, base $n_b, metadata $(head -c 200 <<<"$m")"

mkdir -p build/console-shots "$WORK/home"
if (cd tests/ui && HOME=$WORK/home XDG_CONFIG_HOME=$WORK/home XDG_CACHE_HOME=$WORK/home \
	COVE_URL=http://127.0.0.1:$PORT KEY_A=$KEY KEY_B=$KEY_B KEY_SYNTH=$KEY_S SYNTH_N=$SYNTH_N \
	SB_A=$SB_A SB_B=$SB_B SHOTS=$PWD/../../build/console-shots CHROMIUM=$CHROMIUM \
	timeout 300 "$NODE" console.mjs) >"$WORK/ui.out" 2>&1; then
	ok "the browser's checks ($(grep -c '^ok - ' "$WORK/ui.out") of them)"
else
	not_ok "the browser's checks: $(grep -m3 '^not ok' "$WORK/ui.out" || tail -3 "$WORK/ui.out")"
fi
sed 's/^/    /' "$WORK/ui.out" | head -60

st=$(cd tests/e2b && timeout 60 "$NODE" console.mjs state "$SB_A" 2>&1)
[ "$st" = paused ] && ok "the SDK sees $SB_A paused (paused from the console)" || not_ok "SDK state of $SB_A: $st"
echo "test_console: ${SECONDS} s"
finish
