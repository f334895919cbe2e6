#!/usr/bin/env bash
# The restore fast path (issue 17, docs/snapshots.md "Restore fast path"):
# the first exec of a restore rides on the restore notice's connection and
# already sees the new host name; the first restore of a snapshot records
# its working set (memory.ws, 0400) and the next one prefetches it; a
# broken record costs only the prefetch; a good restore writes nothing to
# the UART; after a 22 s in-VMM pause (past the guest's 21 s RCU stall
# timeout) the guest reports no RCU stall or soft lockup (KVM_KVMCLOCK_CTRL).
source tests/integration/lib.sh
cove_env
need "$ITEST_BIN/cove_client"
export TMPDIR=$WORK
snap=$WORK/snap

if $cove start --name fast >/dev/null && $cove exec fast -- true &&
	$cove snapshot fast "$snap" --stop >/dev/null; then
	ok "snapshot taken"
else
	not_ok "snapshot"; finish
fi

# stats KEY.PATH: one field of the `stats` line cove_client printed.
field() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); [d := d[k] for k in sys.argv[2].split(".")]; print(d if not isinstance(d, (dict, list)) else json.dumps(d))' "$1" "$2"; }

out=$("$ITEST_BIN/cove_client" restore "$snap" 'cat /proc/sys/kernel/hostname' 2>&1)
host=$(printf '%s\n' "$out" | head -n1)
st=$(printf '%s\n' "$out" | sed -n 's/^stats //p')
if [ -n "$st" ] && [ "$host" != fast ] && [[ $host == sb-* ]]; then
	ok "first exec behind the notice sees the new host name ($host)"
else
	not_ok "first restore: $out"
fi
if [ -n "$st" ] && [ "$(field "$st" prefetch.ranges)" = 0 ]; then ok "no record yet: nothing prefetched"; else not_ok "first prefetch: $st"; fi
if [ -f "$snap/memory.ws" ] && [ "$(stat -c %a "$snap/memory.ws")" = 400 ] &&
	[ "$(head -c 8 "$snap/memory.ws")" = "COVEWS1" ] && ! ls "$snap"/.memory.ws.* >/dev/null 2>&1; then
	ok "working set recorded: $(stat -c %s "$snap/memory.ws") bytes"
else
	not_ok "no record: $(ls -la "$snap")"
fi

exits1=$(field "$st" kvm.exits 2>/dev/null)
out=$("$ITEST_BIN/cove_client" restore "$snap" 'echo hi' 2>&1)
st=$(printf '%s\n' "$out" | sed -n 's/^stats //p')
ranges=$(field "$st" prefetch.ranges 2>/dev/null)
if [ "$(printf '%s\n' "$out" | head -n1)" = hi ] && [ "${ranges:-0}" -gt 0 ] &&
	[ "$(field "$st" prefetch.error)" = 0 ] && [ "$(field "$st" prefetch.pages)" -gt 0 ]; then
	ok "second restore prefetched $ranges ranges, $(field "$st" prefetch.pages) pages"
else
	not_ok "second restore: $out"
fi
# The prefetched ranges go into KVM's page tables before the first
# KVM_RUN (Linux 6.10's KVM_PRE_FAULT_MEMORY; in spans, the gaps of up to
# 16 pages between ranges with them), so the guest wakes without a nested
# page fault per page: far fewer exits than the first restore.
pf_err=$(field "$st" prefetch.prefault_error 2>/dev/null)
exits2=$(field "$st" kvm.exits 2>/dev/null)
kver=$(uname -r | awk -F. '{print $1 * 1000 + $2}')
if [ "$pf_err" = -95 ] && [ "$kver" -lt 6010 ]; then
	ok "# SKIP pre-fault: Linux $(uname -r) has no KVM_PRE_FAULT_MEMORY"
elif [ "$pf_err" = 0 ] && [ "$(field "$st" prefetch.prefaulted)" -ge "$(field "$st" prefetch.pages)" ] &&
	[ "${exits2:-0}" -gt 0 ] && [ $((exits2 * 3)) -lt "${exits1:-0}" ]; then
	ok "second restore pre-faulted $(field "$st" prefetch.prefaulted) pages: $exits2 exits against $exits1"
else
	not_ok "pre-fault: error ${pf_err:-?}, exits $exits2 against $exits1: $st"
fi
if [ -n "$st" ] && ! field "$st" exit_addrs | grep -q '"pio_w:0x3f8"'; then
	ok "nothing written to the UART on restore"
else
	not_ok "UART writes on restore: $(field "$st" exit_addrs)"
fi

# A broken record: refused, the restore goes on.
chmod 600 "$snap/memory.ws" && truncate -s 30 "$snap/memory.ws"
out=$("$ITEST_BIN/cove_client" restore "$snap" 'echo ok' 2>&1)
st=$(printf '%s\n' "$out" | sed -n 's/^stats //p')
if [ "$(printf '%s\n' "$out" | head -n1)" = ok ] && [ "$(field "$st" prefetch.error)" = -22 ] &&
	[ "$(field "$st" prefetch.pages)" = 0 ]; then
	ok "a broken record is refused, the restore goes on"
else
	not_ok "broken record: $out"
fi

# A long pause: no stall reports once it runs again.
if $cove start --name paused >/dev/null && $cove exec paused -- true; then
	api=$COVE_RUNTIME_DIR/paused/root/api.sock
	console=$COVE_RUNTIME_DIR/paused/console.log
	before=$(wc -l <"$console")
	r1=$(vmm_api "$api" '{"op":"pause"}')
	sleep 22
	r2=$(vmm_api "$api" '{"op":"resume"}')
	if [[ $r1 == *'"ok": true'* || $r1 == *'"ok":true'* ]] && [[ $r2 == *'"ok": true'* || $r2 == *'"ok":true'* ]] &&
		$cove exec paused -- true && sleep 1 && $cove exec paused -- true; then
		ok "paused 22 s and resumed"
	else
		not_ok "pause/resume: $r1 $r2"
	fi
	if ! tail -n +"$((before + 1))" "$console" | grep -Eiq 'rcu.*stall|soft lockup|watchdog'; then
		ok "no RCU stall or soft lockup report after the pause"
	else
		not_ok "stall reported: $(tail -n +"$((before + 1))" "$console" | head -n 5)"
	fi
	$cove stop paused >/dev/null 2>&1
else
	not_ok "start for the pause"
fi
finish
