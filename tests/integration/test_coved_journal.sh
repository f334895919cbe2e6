#!/usr/bin/env bash
# The journal through coved (issue 30): 100 commands run through envd and
# a file uploaded and read back make one ordered record whose hash chain
# is whole (cove logs --journal --verify, ?verify=1), and stays whole
# across a coved restart (the tail read back); ?since= gives the lines
# after a seq, ?follow=1 streams new ones and ends when the sandbox is
# deleted; one exec line edited by hand: both verifiers name that line.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
coved_env
coved_start || { not_ok "coved starts"; finish; }

out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600}')
[ "$(code)" = 201 ] || { not_ok "create: $out"; finish; }
id=$(jget "$out" 'o["sandboxID"]')
tok=$(jget "$out" 'o["envdAccessToken"]')
J=$STATE/journal/$id.jsonl
n=$(python3 tests/integration/envd_start.py "$SOCK" "$id" "$tok" 100)
[ "$n" = 100 ] && ok "100 commands through envd" || not_ok "envd runs: $n of 100 ended 0"
head -c 5000 /dev/urandom >"$WORK/up.bin"
ecurl() { curl -s --max-time 60 --unix-socket "$SOCK" -H "E2b-Sandbox-Id: $id" -H "X-Access-Token: $tok" "$@"; }
c=$(ecurl -o /dev/null -w '%{http_code}' -H 'Content-Type: application/octet-stream' \
	--data-binary @"$WORK/up.bin" "http://coved/files?path=/root/up.bin&username=root")
ecurl -o "$WORK/down.bin" "http://coved/files?path=/root/up.bin&username=root"
[ "$c" = 200 ] && cmp -s "$WORK/up.bin" "$WORK/down.bin" && ok "a file uploaded and read back" || not_ok "files: $c"

# One record: create, 100 execs, the two transfers with path, bytes, user.
summary=$(python3 - "$J" <<'PY'
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
execs = sum(1 for l in ls if l.get("type") == "exec")
files = [(l["op"], l["path"], l["bytes"], l.get("user")) for l in ls if l.get("type") == "file"]
seqs = [l["seq"] for l in ls] == list(range(1, len(ls) + 1))
print(execs, files == [("write", "/root/up.bin", 5000, "root"), ("read", "/root/up.bin", 5000, "root")],
      seqs, ls[0].get("event"))
PY
)
[ "$summary" = "100 True True created" ] && ok "journal: created, 100 execs, write and read (bytes, user), seq 1.." ||
	not_ok "journal: $summary"
v=$(api GET "/sandboxes/$id/logs?verify=1")
lines=$(jget "$v" 'o["lines"]')
[ "$(jget "$v" 'o["whole"]')" = True ] && [ "$lines" -ge 103 ] && ok "?verify=1: whole, $lines lines" || not_ok "verify: $v"
$cove logs "$id" --journal --verify --state-dir "$STATE" >"$WORK/v" 2>&1 && grep -q "whole, $lines lines" "$WORK/v" &&
	ok "cove logs --journal --verify: whole" || not_ok "cove verify: $(cat "$WORK/v")"
out=$(api GET "/sandboxes/$id/logs?since=$((lines - 2))")
[ "$(jget "$out" '[e["seq"] for e in o["entries"]]')" = "[$((lines - 1)), $lines]" ] && ok "?since=SEQ: the lines after it" ||
	not_ok "since: $out"
out=$(api GET "/sandboxes/$id/logs?since=2999-01-01T00:00:00Z")
[ "$(jget "$out" 'len(o["entries"])')" = 0 ] && ok "?since=RFC3339 in the future: none" || not_ok "since time: $out"
api GET "/sandboxes/$id/logs?since=yesterday" >/dev/null
[ "$(code)" = 400 ] && ok "?since=yesterday -> 400" || not_ok "bad since: $(code)"

# A restart: the chain goes on from the file's last line.
coved_stop
coved_start || { not_ok "coved starts again"; finish; }
n=$(python3 tests/integration/envd_start.py "$SOCK" "$id" "$tok" 1)
v=$(api GET "/sandboxes/$id/logs?verify=1")
[ "$n" = 1 ] && [ "$(jget "$v" 'o["whole"]')" = True ] && [ "$(jget "$v" 'o["seq"]')" -gt "$lines" ] &&
	ok "after a restart the chain goes on: $(jget "$v" 'o["seq"]') lines, whole" || not_ok "after restart: $v"

# ?follow=1: a new exec's line comes on the open stream.
curl -sN --max-time 120 --unix-socket "$SOCK" -H "X-API-KEY: $KEY" \
	"http://coved/sandboxes/$id/logs?follow=1&since=$(jget "$v" 'o["seq"]')" >"$WORK/follow" &
fpid=$!
sleep 1
python3 tests/integration/envd_start.py "$SOCK" "$id" "$tok" 1 >/dev/null
until_true 10 'grep -q "\"type\":\"exec\"" "$WORK/follow"' && ok "?follow=1 streams a new exec line" ||
	not_ok "follow: $(head -c 300 "$WORK/follow")"

# One exec line edited by hand (its exit code): both verifiers name it.
bad=$(python3 - "$J" <<'PY'
import sys
p = sys.argv[1]
ls = open(p, "rb").read().split(b"\n")
k = [i for i, l in enumerate(ls) if b'"type":"exec"' in l][49]
ls[k] = ls[k].replace(b'"exit_code":0', b'"exit_code":1')
open(p, "wb").write(b"\n".join(ls))
print(k + 1)
PY
)
$cove logs "$id" --journal --verify --state-dir "$STATE" >"$WORK/v" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "broken at line $bad:" "$WORK/v" && ok "cove logs --verify: exit 1, names line $bad" ||
	not_ok "cove verify after the edit: rc $rc, $(cat "$WORK/v")"
v=$(api GET "/sandboxes/$id/logs?verify=1")
[ "$(jget "$v" 'o["whole"]')" = False ] && [ "$(jget "$v" 'o["brokenLine"]')" = "$bad" ] &&
	ok "?verify=1 names line $bad: $(jget "$v" 'o["reason"]')" || not_ok "API verify after the edit: $v"

api DELETE "/sandboxes/$id" >/dev/null
t0=$(date +%s)
wait "$fpid"
[ $(($(date +%s) - t0)) -le 10 ] && grep -q '"event":"killed"' "$WORK/follow" &&
	ok "the follow stream ends with the sandbox (its killed line last)" || not_ok "follow end: $(tail -c 300 "$WORK/follow")"
finish
