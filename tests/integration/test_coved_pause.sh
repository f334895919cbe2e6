#!/usr/bin/env bash
# Pause and resume through coved lose no write: the guest writes 10 files
# and 50 MB without sync, coved pauses it (snapshot to disk, cove-vmm
# gone) and resumes it (connect); every checksum matches before and after,
# and again once the guest has synced and dropped its page cache (the data
# reached the disk, not only the restored memory).
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
coved_env
coved_start '"memory_mib": 256, "disk_mib": 256' || { not_ok "coved starts"; finish; }

out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":3600}')
[ "$(code)" = 201 ] || { not_ok "create: $out"; finish; }
id=$(jget "$out" 'o["sandboxID"]')
tok=$(jget "$out" 'o["envdAccessToken"]')
gx "$id" 'mkdir -p /root/d && for i in 0 1 2 3 4 5 6 7 8 9; do head -c $((i * 1000 + 17)) /dev/urandom > /root/d/f$i; done
head -c 52428800 /dev/urandom > /root/big' >/dev/null
sums() { gx "$id" 'cd /root && sha256sum d/f0 d/f1 d/f2 d/f3 d/f4 d/f5 d/f6 d/f7 d/f8 d/f9 big'; }
before=$(sums)
[ "$(echo "$before" | grep -c '^[0-9a-f]\{64\} ')" = 11 ] && ok "10 files and 50 MB written, no sync" || { not_ok "writes: $before"; finish; }
api POST "/sandboxes/$id/pause" '{}' >/dev/null
[ "$(code)" = 204 ] && ok "paused" || { not_ok "pause: $(code) $(cat "$WORK/body")"; finish; }
$cove ls 2>/dev/null | grep -q "$id" && not_ok "cove-vmm still runs while paused" || ok "no cove-vmm while paused"
out=$(api POST "/v2/sandboxes/$id/connect" '{"timeout":3600}')
[ "$(code)" = 201 ] && [ "$(jget "$out" 'o["envdAccessToken"]')" = "$tok" ] && ok "resumed, same token" || { not_ok "connect: $out"; finish; }
after=$(sums)
[ "$before" = "$after" ] && ok "all 11 checksums match after resume" || not_ok "checksums differ:
$before
--
$after"
gx "$id" 'sync; echo 3 > /proc/sys/vm/drop_caches' >/dev/null
cold=$(sums)
[ "$before" = "$cold" ] && ok "and after sync + drop_caches (read back from the disk)" || not_ok "cold checksums differ"
# A second pause of the resumed sandbox, after more writes: its memory is
# a private mapping of the first pause's file, and the new memory file's
# pages are charged to its cgroup (libcove raises memory.max for the
# snapshot; before that the kernel killed cove-vmm mid-snapshot).
gx "$id" 'head -c 20971520 /dev/urandom > /root/big2; sync; echo 3 > /proc/sys/vm/drop_caches' >/dev/null
before2=$(gx "$id" 'sha256sum /root/big2')
api POST "/sandboxes/$id/pause" '{}' >/dev/null
[ "$(code)" = 204 ] && ok "paused again after the resume" || { not_ok "second pause: $(code) $(cat "$WORK/body")"; finish; }
api POST "/v2/sandboxes/$id/connect" '{"timeout":3600}' >/dev/null
[ "$(code)" = 201 ] && [ "$(gx "$id" 'sha256sum /root/big2')" = "$before2" ] && [ "$(sums)" = "$before" ] &&
	ok "resumed again: every checksum matches" || not_ok "second resume: $(code) $(cat "$WORK/body")"
api DELETE "/sandboxes/$id" >/dev/null
[ "$(code)" = 204 ] && ok "deleted" || not_ok "delete: $(code)"
[ -z "$(ls "$STATE/snapshots")" ] && ok "its pause snapshots are removed with it" || not_ok "left: $(ls "$STATE/snapshots")"
finish
