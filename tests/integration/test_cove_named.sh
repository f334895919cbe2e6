#!/usr/bin/env bash
# Named sandboxes: cove start leaves a detached VMM behind; exec, cp, ls and
# stop find it by name from other cove processes; a duplicate name is
# refused; a VMM killed behind cove's back is reported and cleaned by ls.
source tests/integration/lib.sh
cove_env # whatever the outcome, no VMM outlives the test

check "start alpha prints its name" 0 "alpha" $cove start --name alpha
check "start beta (2 CPUs, 384 MiB)" 0 "beta" $cove start --name beta --cpus 2 --memory 384
apid=$(meta_pid alpha)
bpid=$(meta_pid beta)
[ -n "$apid" ] && [ -d "/proc/$apid" ] && [ -n "$bpid" ] && [ -d "/proc/$bpid" ] &&
	ok "both VMMs outlive cove start (pids $apid, $bpid)" || not_ok "VMMs gone after start: '$apid' '$bpid'"
# Detached: a session of its own, not ours.
[ "$(awk '{print $6}' "/proc/$apid/stat")" != "$(awk '{print $6}' /proc/$$/stat)" ] &&
	ok "the VMM runs in its own session" || not_ok "the VMM shares our session"
head -c 4 "$COVE_RUNTIME_DIR/alpha/root/disk0.qcow2" | od -An -tx1 | grep -q '51 46 49 fb' &&
	ok "the root disk is a qcow2 overlay" || not_ok "disk0.qcow2 is not qcow2"

# exec: output, status, environment, stdin, state kept between execs.
check "exec: hostname is the name" 0 "alpha" $cove exec alpha -- hostname
check "exec in beta sees 2 CPUs" 0 "2" $cove exec beta -- nproc
check "exec: exit status" 7 "" $cove exec alpha -- sh -c 'exit 7'
check "exec: killed by a signal" 137 "" $cove exec alpha -- sh -c 'kill -9 $$'
check "exec: options before the name" 0 "bar /tmp" $cove exec -e FOO=bar -w /tmp alpha -- sh -c 'echo $FOO $(pwd)'
check "exec: stdin piped through" 0 "3" sh -c "printf 'a\nb\nc\n' | $cove exec alpha -- wc -l"
check "exec: --timeout gives 124" 124 "" $cove exec --timeout 1 alpha -- sleep 30
check "exec: missing program gives 127" 127 "" $cove exec alpha -- /no/such/program
$cove exec alpha -- sh -c 'echo kept >/root/state && sync' 2>"$WORK/stderr"
check "exec: the root disk keeps what an earlier exec wrote" 0 "kept" $cove exec alpha -- cat /root/state
check "exec: sandboxes are apart" 1 "" $cove exec beta -- test -e /root/state

# cp both ways, 5 MiB, sha256 compared.
head -c $((5 << 20)) /dev/urandom >"$WORK/blob"
sum=$(sha256sum <"$WORK/blob" | cut -c1-64)
if $cove cp "$WORK/blob" alpha:/tmp/blob 2>"$WORK/stderr"; then ok "cp LOCAL NAME:PATH"; else not_ok "cp in: $(cat "$WORK/stderr")"; fi
check "cp: the guest has the same bytes" 0 "$sum" $cove exec alpha -- sh -c 'sha256sum /tmp/blob | cut -c1-64'
if $cove cp alpha:/tmp/blob "$WORK/back" 2>"$WORK/stderr"; then ok "cp NAME:PATH LOCAL"; else not_ok "cp out: $(cat "$WORK/stderr")"; fi
back=$(sha256sum <"$WORK/back" | cut -c1-64)
[ "$back" = "$sum" ] && ok "cp: sha256 matches both ways" || not_ok "cp: back '$back', want '$sum'"
mkdir "$WORK/into"
$cove exec beta -- sh -c 'hostname >/tmp/hn' 2>"$WORK/stderr"
$cove cp beta:/tmp/hn "$WORK/into" 2>>"$WORK/stderr"
[ "$(cat "$WORK/into/hn" 2>/dev/null)" = beta ] && ok "cp into a local directory keeps the file's name" ||
	not_ok "cp into a directory: $(ls "$WORK/into") $(cat "$WORK/stderr")"
out=$($cove cp alpha:/no/such/file "$WORK/x" 2>&1)
[ $? = 1 ] && [[ $out == *such* ]] && ok "cp of a missing guest file: $out" || not_ok "cp missing: '$out'"

# A name in use is refused; bad names and unknown sandboxes are errors.
out=$($cove start --name alpha 2>&1)
rc=$?
[ $rc = 1 ] && [[ $out == *"sandbox alpha already exists"* ]] && ok "duplicate name refused: $out" ||
	not_ok "duplicate name: status $rc '$out'"
[ "$(meta_pid alpha)" = "$apid" ] && [ -d "/proc/$apid" ] && ok "the refused start left alpha alone" ||
	not_ok "the refused start disturbed alpha"
out=$($cove start --name .hidden 2>&1)
[ $? = 2 ] && [[ $out == *"invalid sandbox name"* ]] && ok "bad name: $out" || not_ok "bad name: '$out'"
out=$($cove exec nosuch -- true 2>&1)
[ $? = 125 ] && [[ $out == *"no sandbox named nosuch"* ]] && ok "exec of an unknown name: $out" ||
	not_ok "exec unknown: '$out'"

# ls: both, as a table and as JSON.
$cove ls >"$WORK/ls" 2>"$WORK/stderr"
grep -Eq "^alpha +running +$apid +1 +256M " "$WORK/ls" && grep -Eq "^beta +running +$bpid +2 +384M " "$WORK/ls" &&
	ok "ls shows both running" || not_ok "ls: $(cat "$WORK/ls" "$WORK/stderr")"
$cove ls --json >"$WORK/ls.json"
[ "$(grep -c '"state": "running"' "$WORK/ls.json")" = 2 ] && grep -q '"name": "beta"' "$WORK/ls.json" &&
	ok "ls --json lists both" || not_ok "ls --json: $(cat "$WORK/ls.json")"

# A VMM killed behind cove's back: ls reports it dead once and removes it.
kill -9 "$bpid"
for _ in $(seq 100); do
	state=$(awk '{print $3}' "/proc/$bpid/stat" 2>/dev/null)
	[ -z "$state" ] || [ "$state" = Z ] && break
	sleep 0.1
done
$cove ls >"$WORK/ls" 2>"$WORK/stderr"
grep -Eq "^beta +dead " "$WORK/ls" && grep -q "sandbox beta was dead" "$WORK/stderr" &&
	ok "ls reports the killed sandbox: $(cat "$WORK/stderr")" || not_ok "ls after kill: $(cat "$WORK/ls" "$WORK/stderr")"
[ ! -e "$COVE_RUNTIME_DIR/beta" ] && ok "its entry is removed" || not_ok "beta's directory is still there"
$cove ls >"$WORK/ls" 2>"$WORK/stderr"
! grep -q beta "$WORK/ls" && grep -Eq "^alpha +running" "$WORK/ls" && ok "the next ls shows only alpha" ||
	not_ok "second ls: $(cat "$WORK/ls" "$WORK/stderr")"

# stop: the VMM exits, the entry goes; unknown names are errors.
check "stop alpha" 0 "" $cove stop alpha
for _ in $(seq 50); do [ -d "/proc/$apid" ] || break; sleep 0.1; done
state=$(awk '{print $3}' "/proc/$apid/stat" 2>/dev/null)
[ -z "$state" ] || [ "$state" = Z ] && ok "alpha's VMM exited" || not_ok "alpha's VMM still runs ($state)"
[ ! -e "$COVE_RUNTIME_DIR/alpha" ] && ok "alpha's entry is removed" || not_ok "alpha's directory is still there"
out=$($cove stop alpha 2>&1)
[ $? = 1 ] && [[ $out == *"no sandbox named alpha"* ]] && ok "stop of an unknown name: $out" || not_ok "stop unknown: '$out'"
out=$($cove ls 2>&1)
[ $? = 0 ] && [[ $out == NAME* ]] && [ "$(echo "$out" | wc -l)" = 1 ] && ok "ls is empty" || not_ok "ls at the end: '$out'"
finish
