#!/usr/bin/env bash
# coved's warm pool (warm_pool): sandboxes of a template restored ahead of
# any create and kept running, nobody's (not listed), at nice 19; a create
# takes one (coved_warm_hits_total) and gets its own envVars, network
# policy (the member waited denying everything), sandbox id and a fresh
# clock; two creates never share a VM (different VMMs, memory and ids);
# the pool refills with new members; a coved that stops ends its members
# and leaves the handed-out sandboxes running; members of a coved killed
# are stopped by the next one.
source tests/integration/lib.sh
source tests/integration/netlib.sh
source tests/integration/coved_lib.sh
net_env
coved_env
RT=$COVE_RUNTIME_DIR

members() { # the registry names of warm sandboxes
	local e
	for e in "$RT"/*/; do [ -e "$e/coved-warm" ] && basename "$e"; done
}
vmm_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$RT/$1/meta.json"; }
nice_of() { awk '{ print $19 }' "/proc/$1/stat"; }
# envd ID TOKEN 'shell command': its stdout, through coved's envd surface
# (process.Process/Start, the Connect protocol's JSON envelopes).
envd() {
	python3 - "$SOCK" "$1" "$2" "$3" <<'PY'
import base64, json, socket, struct, sys
sock, sid, tok, cmd = sys.argv[1:]
msg = json.dumps({"process": {"cmd": "/bin/sh", "args": ["-c", cmd]}}).encode()
body = b"\0" + struct.pack(">I", len(msg)) + msg
s = socket.socket(socket.AF_UNIX)
s.settimeout(60)
s.connect(sock)
s.sendall(b"POST /process.Process/Start HTTP/1.1\r\nHost: coved\r\nConnection: close\r\n"
          b"Content-Type: application/connect+json\r\nE2b-Sandbox-Id: " + sid.encode() +
          b"\r\nX-Access-Token: " + tok.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
raw = b""
while chunk := s.recv(65536):
    raw += chunk
head, _, rest = raw.partition(b"\r\n\r\n")
if b"chunked" in head.lower():
    data = b""
    while rest:
        n, _, rest = rest.partition(b"\r\n")
        n = int(n, 16)
        if n == 0:
            break
        data, rest = data + rest[:n], rest[n + 2:]
    rest = data
out = b""
while len(rest) >= 5:
    n = struct.unpack(">I", rest[1:5])[0]
    m = json.loads(rest[5:5 + n])
    rest = rest[5 + n:]
    d = m.get("event", {}).get("data", {})
    if "stdout" in d:
        out += base64.b64decode(d["stdout"])
sys.stdout.write(out.decode())
PY
}

t0=$(date +%s)
coved_start '"network": true, "net_pool_size": 2, "warm_pool": {"base": 2}' || { not_ok "coved starts"; finish; }
warm_state() { echo "ready=$(metric coved_warm_ready) made=$(metric coved_warm_made_total) failed=$(metric coved_warm_failed_total) members: $(members | tr '\n' ' ')"; }
until_metric coved_warm_ready 2 300 && ok "2 warm sandboxes restored before any create ($(($(date +%s) - t0)) s)" ||
	{ not_ok "warm pool never filled: $(warm_state)"; tail -n 5 "$WORK/coved.log"; finish; }
m0=$(members | sort)
[ "$(wc -l <<<"$m0")" = 2 ] && ok "2 registry entries are warm members" || not_ok "members: $m0"
for m in $m0; do
	[ "$(nice_of "$(vmm_of "$m")")" = 19 ] || not_ok "member $m runs at nice $(nice_of "$(vmm_of "$m")")"
done
out=$(api GET /v2/sandboxes)
[ "$out" = "[]" ] && ok "members are nobody's sandboxes (the list is empty)" || not_ok "list: $out"

out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600,"envVars":{"WARM":"a"},"network":{"allowOut":["198.51.100.90/32:9000"]}}')
[ "$(code)" = 201 ] || { not_ok "create A: $out"; finish; }
a=$(jget "$out" 'o["sandboxID"]')
ta=$(jget "$out" 'o["envdAccessToken"]')
grep -qx "$a" <<<"$m0" && [ "$(metric coved_warm_hits_total)" = 1 ] && ok "create A was handed warm sandbox $a" ||
	not_ok "A: $a, hits $(metric coved_warm_hits_total), members were: $m0"
pa=$(vmm_of "$a")
[ "$(nice_of "$pa")" = 0 ] && ok "its cove-vmm is at priority 0 again" || not_ok "nice $(nice_of "$pa")"
o=$(envd "$a" "$ta" 'echo "$WARM $(cat /run/cove/sandbox-id) $(date +%s)"')
read -r env sid gt <<<"$o"
now=$(date +%s)
[ "$env" = a ] && [ "$sid" = "$a" ] && [ "${gt:-0}" -ge $((now - 5)) ] && [ "${gt:-0}" -le $((now + 5)) ] &&
	ok "A runs with its own envVars, sandbox id and a clock within 5 s of the host's" ||
	not_ok "A said '$o' (host clock $now)"
works "$a" "A's allow rule holds (198.51.100.90:9000)" 'echo hi | nc -w 10 198.51.100.90 9000' 'banner pin'
fast_fail "$a" "A reaches nothing else (198.51.100.80:80)" 'timeout 30 wget -q -O- http://198.51.100.80/'

out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600,"envVars":{"WARM":"b"},"allow_internet_access":false}')
[ "$(code)" = 201 ] || { not_ok "create B: $out"; finish; }
b=$(jget "$out" 'o["sandboxID"]')
tb=$(jget "$out" 'o["envdAccessToken"]')
grep -qx "$b" <<<"$m0" && [ "$b" != "$a" ] && [ "$(metric coved_warm_hits_total)" = 2 ] &&
	ok "create B was handed the other one, $b" || not_ok "B: $b (A $a), hits $(metric coved_warm_hits_total)"
pb=$(vmm_of "$b")
o=$(envd "$b" "$tb" 'echo "$WARM $(cat /run/cove/sandbox-id)"; echo secret-a > /dev/shm/w')
[ "$o" = "b $b" ] && ok "B has its own envVars and id" || not_ok "B said '$o'"
o=$(gx "$a" 'cat /dev/shm/w 2>&1 || echo none')
[ "$pa" != "$pb" ] && grep -q none <<<"$o" && ! grep -q secret <<<"$o" &&
	ok "A and B share no VM: VMMs $pa and $pb, B's memory is not A's" ||
	not_ok "shared? VMMs $pa $pb; A read: $o"
fast_fail "$b" "B's deny-all holds" 'nc -w 10 198.51.100.90 9000 </dev/null | grep banner'

until_metric coved_warm_ready 2 300 && ok "refilled to 2" || not_ok "no refill: $(warm_state)"
m1=$(members | sort)
grep -qx "$a" <<<"$m1" || grep -qx "$b" <<<"$m1" && not_ok "a handed-out sandbox is a member again: $m1" ||
	ok "the new members are new sandboxes ($(tr '\n' ' ' <<<"$m1"))"
[ "$(metric coved_warm_made_total)" = 4 ] || not_ok "made $(metric coved_warm_made_total), want 4"

# cove bench create against this coved: each create waits for a full pool
# and is handed a warm sandbox.
if COVE_API_KEY=$KEY $cove bench create -n 2 --socket "$SOCK" --json "$WORK/create.json" >"$WORK/bench.out" 2>&1 &&
	python3 - "$WORK/create.json" <<'PY'; then
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
assert len(s) == 2 and all(x["warm"] for x in s), s
for x in s:
    p = x["phases"]
    assert 0 < p["create"] < p["create_to_first_command"] and p["first_command"] > 0 and p["command_running"] > 0, p
PY
	ok "cove bench create: 2 warm creates, $(grep -o 'first command / command p50: .*' "$WORK/bench.out")"
else
	not_ok "cove bench create: $(tail -n 3 "$WORK/bench.out")"
fi
until_metric coved_warm_ready 2 300 || not_ok "no refill after the bench: $(warm_state)"
m1=$(members | sort)

# coved stops: its members stop, the handed-out sandboxes keep running.
mp=$(for m in $m1; do vmm_of "$m"; done)
coved_stop
gone=yes
for p in $mp; do [ -d "/proc/$p" ] && gone="no: $p"; done
[ "$gone" = yes ] && [ -z "$(members)" ] && kill -0 "$pa" && kill -0 "$pb" &&
	ok "a stopping coved stops its members; A and B run on" || not_ok "members left: $gone $(members)"

# A coved killed with members running: the next one stops them.
coved_start '"network": true, "net_pool_size": 1, "warm_pool": {"base": 1}' || { not_ok "coved starts again"; finish; }
until_metric coved_warm_ready 1 300 || not_ok "second pool not ready: $(warm_state)"
old=$(members)
slots=$(find "$RT" -maxdepth 1 -name '.np-*' -printf '%f\n')
kill -9 "$COVED_PID"
wait "$COVED_PID" 2>/dev/null
COVED_PID=
# The next coved keeps no pool of either kind: it still cleans up.
coved_start '"network": true' || { not_ok "coved starts a third time"; finish; }
left=$(for m in $old $slots; do [ -e "$RT/$m" ] && echo "$m"; done)
[ -n "$old" ] && [ -n "$slots" ] && [ -z "$left" ] && grep -q "stopping warm sandbox $old" "$WORK/coved.log" &&
	ok "the killed coved's member $old and network slot $slots were removed by the next coved" ||
	not_ok "left: '$left' of '$old $slots'"
kill -0 "$pa" && kill -0 "$pb" && [ "$(jget "$(api GET "/sandboxes/$a")" 'o["state"]')" = running ] &&
	ok "A and B, handed out, outlived both restarts (adopted, not taken for members)" ||
	not_ok "A or B stopped: $(api GET "/sandboxes/$a")"
api DELETE "/sandboxes/$a" >/dev/null
api DELETE "/sandboxes/$b" >/dev/null

# coved resolves a base template once per shape while its inputs stay the
# same files (coved_template_for's memo): the second create takes that
# path; an image replaced after it is a new template, not the memo's.
marker=marker-$RANDOM$RANDOM
ids=()
for i in 1 2 3; do
	if [ "$i" = 3 ]; then
		img=$WORK/images/minimal.ext4
		cp --sparse=always "$(readlink -f "$img")" "$WORK/img.new"
		echo "$marker" >"$WORK/marker"
		debugfs -w -R "write $WORK/marker /marker" "$WORK/img.new" >/dev/null 2>&1
		mv -f "$WORK/img.new" "$img"
	fi
	out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600}')
	[ "$(code)" = 201 ] || { not_ok "create $i: $out"; finish; }
	ids+=("$(jget "$out" 'o["sandboxID"]')")
done
o1=$(gx "${ids[1]}" 'cat /marker 2>&1 || echo none')
o2=$(gx "${ids[2]}" 'cat /marker 2>&1 || echo none')
grep -q none <<<"$o1" && [ "$o2" = "$marker" ] &&
	ok "a create after the image changed restores the new image's template ($marker)" ||
	not_ok "the second create read '$o1', the one after the change '$o2'"
for i in "${ids[@]}"; do api DELETE "/sandboxes/$i" >/dev/null; done
finish
