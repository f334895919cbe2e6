#!/usr/bin/env bash
# Lifecycle events (issue 30): create -> pause -> resume -> kill yields
# created, paused, resumed, killed in that order on GET /events (server-
# sent events), each with its reason; another tenant's stream shows none
# of them; a webhook receiver (python's http.server here) gets the same
# four POSTs and checks each signature (HMAC-SHA-256 over
# "<timestamp>.<body>"); the secret is never answered, logged or journaled.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
coved_env
KEYB=coved-test-keyb-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf 'alice:%s\nbob:%s\n' "$KEY" "$KEYB" >"$WORK/keys"
coved_start "\"webhook_private_ok\": true" || { not_ok "coved starts"; finish; }
SECRET=hook-secret-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')

# The receiver: one JSON line per POST, {type, good signature, age}.
python3 - "$WORK/hooks.jsonl" "$WORK/port" "$SECRET" <<'PY' &
import hashlib, hmac, http.server, json, sys, time
out, portfile, secret = sys.argv[1], sys.argv[2], sys.argv[3].encode()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        ts = self.headers.get("X-Cove-Timestamp", "")
        want = "v1=" + hmac.new(secret, ts.encode() + b"." + body, hashlib.sha256).hexdigest()
        good = hmac.compare_digest(want, self.headers.get("X-Cove-Signature", ""))
        ev = json.loads(body)
        rec = {"type": ev["type"], "good": good, "age": abs(time.time() - int(ts or 0)),
               "reason": ev.get("reason"), "header": self.headers.get("X-Cove-Event")}
        with open(out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(portfile, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
rpid=$!
until_true 10 '[ -s "$WORK/port" ]' || { not_ok "the receiver starts"; finish; }
out=$(api POST /webhooks "{\"url\":\"http://127.0.0.1:$(cat "$WORK/port")/hook\",\"secret\":\"$SECRET\"}")
hid=$(jget "$out" 'o["id"]')
[ "$(code)" = 201 ] && ! grep -q "$SECRET" "$WORK/body" && ok "webhook $hid registered, its secret not echoed" ||
	not_ok "POST /webhooks: $(code) $out"
out=$(api GET /webhooks)
[ "$(jget "$out" 'len(o)')" = 1 ] && ! grep -q "$SECRET" <<<"$out" && ok "GET /webhooks lists it without the secret" ||
	not_ok "GET /webhooks: $out"
bob() { curl -s --max-time 30 --unix-socket "$SOCK" -H "X-API-KEY: $KEYB" -o "$WORK/bbody" -w '%{http_code}' "$@"; }
[ "$(bob http://coved/webhooks)" = 200 ] && [ "$(cat "$WORK/bbody")" = "[]" ] &&
	[ "$(bob -X DELETE "http://coved/webhooks/$hid")" = 404 ] && ok "bob sees no webhook and cannot delete alice's" ||
	not_ok "bob's webhooks: $(cat "$WORK/bbody")"

sse() { curl -sN --max-time 120 --unix-socket "$SOCK" -H "X-API-KEY: $1" http://coved/events >"$2" & }
sse "$KEY" "$WORK/sse"
apid=$!
sse "$KEYB" "$WORK/sse_bob"
bpid=$!
until_true 10 'grep -q subscribed "$WORK/sse" && grep -q subscribed "$WORK/sse_bob"' || not_ok "the streams open"

out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600}')
[ "$(code)" = 201 ] || { not_ok "create: $out"; finish; }
id=$(jget "$out" 'o["sandboxID"]')
api POST "/sandboxes/$id/pause" '{}' >/dev/null
[ "$(code)" = 204 ] || not_ok "pause: $(code)"
api POST "/v2/sandboxes/$id/connect" '{"timeout":600}' >/dev/null
[ "$(code)" = 201 ] || not_ok "connect: $(code)"
api DELETE "/sandboxes/$id" >/dev/null
[ "$(code)" = 204 ] || not_ok "delete: $(code)"

until_true 15 '[ "$(grep -c "^event: " "$WORK/sse")" -ge 4 ]'
types=$(grep '^event: ' "$WORK/sse" | cut -d' ' -f2 | tr '\n' ' ')
[ "$types" = "created paused resumed killed " ] && ok "/events: $types" || not_ok "/events: '$types'"
got=$(grep '^data: ' "$WORK/sse" | cut -c7- | python3 -c '
import json, sys
print(" ".join("%s/%s/%s" % (e["type"], e["reason"], e["sandboxID"] == sys.argv[1]) for e in map(json.loads, sys.stdin)))' "$id")
[ "$got" = "created/requested/True paused/requested/True resumed/requested/True killed/requested/True" ] &&
	ok "each names the sandbox and its reason" || not_ok "event data: $got"
! grep -q '^event: ' "$WORK/sse_bob" && ok "bob's stream shows none of alice's events" || not_ok "bob saw: $(cat "$WORK/sse_bob")"

until_true 20 '[ "$(wc -l <"$WORK/hooks.jsonl" 2>/dev/null)" -ge 4 ]'
hooks=$(python3 -c '
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
print(" ".join(r["type"] for r in rs), all(r["good"] and r["age"] < 60 and r["header"] == r["type"] for r in rs))' "$WORK/hooks.jsonl")
[ "$hooks" = "created paused resumed killed True" ] && ok "the webhook got the four, each signature good" ||
	not_ok "webhook: $hooks ($(cat "$WORK/hooks.jsonl" 2>/dev/null))"
! grep -rq "$SECRET" "$WORK/coved.log" "$STATE/journal" && ok "the secret is in no log nor journal" ||
	not_ok "the secret leaked"
api DELETE "/webhooks/$hid" >/dev/null
[ "$(code)" = 204 ] && [ "$(api GET /webhooks)" = "[]" ] && ok "webhook deleted" || not_ok "DELETE /webhooks: $(code)"
kill "$apid" "$bpid" "$rpid" 2>/dev/null
wait "$apid" "$bpid" "$rpid" 2>/dev/null
finish
