#!/usr/bin/env bash
# Snapshots through the CLI, with the agent: state in memory (a counting
# shell loop, a tmpfs file) survives snapshot and restore; a file not yet
# synced is on the snapshot's disk (cove snapshot syncs first); three forks each
# see only their own writes; forks differ in random numbers, host name and
# sandbox id, and their wall clock is the host's; the base image is never
# written; a corrupted snapshot is refused with one line.
source tests/integration/lib.sh
cove_env
base_sum=$(sha256sum <"$COVE_IMAGE")


$cove start --name s1 --memory 256 >/dev/null || { not_ok "start s1"; finish; }
gx s1 'echo kept-in-tmpfs > /tmp/note
setsid sh -c "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/count; sleep 1; done" >/dev/null 2>&1 </dev/null &'
# Written, not synced: the snapshot's sync puts it on the disk it keeps, so
# that no fork writes it back again.
marker=dirty-at-snapshot-$RANDOM$RANDOM
gx s1 "for i in \$(seq 64); do echo $marker; done > /root/dirty" >/dev/null
for _ in $(seq 60); do [ "$(gx s1 'cat /tmp/count 2>/dev/null')" -ge 3 ] 2>/dev/null && break; sleep 1; done
snap=$WORK/snap
if $cove snapshot s1 "$snap" 2>"$WORK/err"; then ok "snapshot of a running sandbox"; else
	not_ok "snapshot: $(cat "$WORK/err")"; finish; fi
at=$(gx s1 'cat /tmp/count')
if grep -q "$marker" "$snap/disk0.qcow2"; then ok "the guest's unsynced writes are in the snapshot's disk"; else
	not_ok "the snapshot's disk lacks the unsynced file (no sync before the snapshot)"; fi
echo "counter at the snapshot: about $at"
if [ "$(gx s1 'cat /tmp/note')" = kept-in-tmpfs ]; then ok "the original runs on after the snapshot"; else
	not_ok "original after snapshot"; fi
$cove stop s1 >/dev/null

if $cove restore "$snap" --name r1 >/dev/null 2>"$WORK/err"; then ok "restore"; else
	not_ok "restore: $(cat "$WORK/err")"; finish; fi
c1=$(gx r1 'cat /tmp/count')
sleep 2
c2=$(gx r1 'cat /tmp/count')
if [ "$(gx r1 'cat /tmp/note')" = kept-in-tmpfs ]; then ok "tmpfs file survives restore"; else not_ok "tmpfs file lost"; fi
if [ "$c1" -ge "$at" ] 2>/dev/null && [ "$c1" -lt $((at + 30)) ] && [ "$c2" -gt "$c1" ]; then
	ok "the counting loop goes on from $c1 to $c2 (snapshot at about $at)"; else
	not_ok "counter after restore: $c1 then $c2 (snapshot at $at)"; fi
$cove stop r1 >/dev/null

if $cove fork "$snap" --count 3 --prefix f >"$WORK/forks" 2>"$WORK/err"; then
	ok "fork of 3: $(tr '\n' ' ' <"$WORK/forks")"; else not_ok "fork: $(cat "$WORK/err")"; finish; fi
for i in 1 2 3; do gx f-$i "echo fork-$i > /root/own-$i; sync" >/dev/null; done
for i in 1 2 3; do
	seen=$(gx f-$i 'ls /root | grep "^own-" | tr "\n" " "')
	if [ "$seen" = "own-$i " ]; then ok "fork $i sees only its own file"; else not_ok "fork $i sees '$seen'"; fi
done
r1=$(gx f-1 'head -c 16 /dev/urandom | od -An -tx1 | tr -d " \n"')
r2=$(gx f-2 'head -c 16 /dev/urandom | od -An -tx1 | tr -d " \n"')
if [ ${#r1} = 32 ] && [ "$r1" != "$r2" ]; then ok "forks read different random bytes ($r1 / $r2)"; else
	not_ok "random bytes: '$r1' '$r2'"; fi
h1=$(gx f-1 hostname) h2=$(gx f-2 hostname)
i1=$(gx f-1 'cat /run/cove/sandbox-id') i2=$(gx f-2 'cat /run/cove/sandbox-id')
if [ "$h1" = f-1 ] && [ "$h2" = f-2 ] && [ -n "$i1" ] && [ "$i1" != "$i2" ]; then
	ok "forks have their own host name and sandbox id ($h1/$i1, $h2/$i2)"; else
	not_ok "identity: '$h1' '$h2' '$i1' '$i2'"; fi
skew=$(($(gx f-3 'date +%s') - $(date +%s)))
if [ "${skew#-}" -le 5 ]; then ok "a fork's wall clock is the host's (skew ${skew}s)"; else
	not_ok "wall clock skew ${skew}s"; fi
if [ "$(gx f-3 'cat /tmp/note')" = kept-in-tmpfs ]; then ok "forks keep the snapshot's memory"; else
	not_ok "fork lost tmpfs state"; fi
for i in 1 2 3; do $cove stop f-$i >/dev/null; done
if [ "$(sha256sum <"$COVE_IMAGE")" = "$base_sum" ]; then ok "base image unchanged"; else
	not_ok "the base image was written"; fi
if qemu-img check -q "$snap/disk0.qcow2" 2>/dev/null; then ok "frozen disk passes qemu-img check"; else
	command -v qemu-img >/dev/null && not_ok "qemu-img check of the frozen disk"; fi

# Two vCPUs: both restored, both run.
$cove start --name smp --cpus 2 --memory 320 >/dev/null
gx smp 'echo smp-state > /tmp/n' >/dev/null
sleep 3 # let boot-time work settle (see the freeze note in docs/benchmarks.md)
if $cove snapshot smp "$WORK/snap-smp" --stop 2>"$WORK/err" &&
	$cove restore "$WORK/snap-smp" --name smp2 >/dev/null 2>>"$WORK/err"; then
	got=$(gx smp2 'cat /tmp/n; nproc; for i in 1 2 3 4; do (i=0; while [ $i -lt 5000 ]; do i=$((i+1)); done) & done; wait; echo busy-ok' | tr '\n' ' ')
	if [ "$got" = "smp-state 2 busy-ok " ]; then ok "2-vCPU sandbox restored: $got"; else not_ok "2-vCPU restore: '$got'"; fi
	$cove stop smp2 >/dev/null
else
	not_ok "2-vCPU snapshot/restore: $(cat "$WORK/err")"
fi

bad=$WORK/bad
cp -a "$snap" "$bad"
chmod u+w "$bad"/*
printf '\xff\xff' | dd of="$bad/state" bs=1 seek=300 conv=notrunc status=none
err=$($cove restore "$bad" --name broken 2>&1 >/dev/null)
rc=$?
if [ $rc != 0 ] && [[ $err == *checksum* ]] && [ "$(echo "$err" | wc -l)" = 1 ] &&
	! [ -e "$COVE_RUNTIME_DIR/broken" ]; then ok "corrupted snapshot refused: $err"; else
	not_ok "corrupted snapshot: status $rc, '$err'"; fi
finish
