#!/usr/bin/env bash
# --disk-rate 16M: 64 MiB written by the guest (dd with conv=fsync, so all
# of it reaches the disk before dd ends) takes at least 3.5 s measured on
# the host (64 MiB at 16 MiB/s is 4 s less the 1.6 MiB burst).  The same
# dd in a sandbox without a limit is recorded for comparison only (times
# in the emulated host are noisy).  The VMM's stats count the waits.
source tests/integration/lib.sh
cove_env
dd_cmd='dd if=/dev/zero of=/root/x bs=1M count=64 conv=fsync 2>&1; echo "status $?"'
timed() { # NAME: prints "SECONDS OUTPUT"
	local s e out
	s=$(date +%s.%N)
	out=$($cove exec "$1" -- sh -c "$dd_cmd" 2>&1)
	e=$(date +%s.%N)
	echo "$(echo "$e - $s" | bc) $out"
}
$cove start --name free --disk-size 256M >/dev/null || { not_ok "start free"; finish; }
$cove start --name slow --disk-size 256M --disk-rate 16M >/dev/null || { not_ok "start slow"; finish; }
free=$(timed free)
slow=$(timed slow)
echo "  unlimited: ${free%% *} s; limited to 16 MiB/s: ${slow%% *} s"
[[ $slow == *"status 0"* ]] && ok "the limited dd succeeded" || not_ok "limited dd: $slow"
[[ $free == *"status 0"* ]] && ok "the unlimited dd succeeded" || not_ok "unlimited dd: $free"
if [ "$(echo "${slow%% *} >= 3.5" | bc)" = 1 ]; then ok "64 MiB at 16 MiB/s took ${slow%% *} s (at least 3.5 s)"; else
	not_ok "64 MiB at 16 MiB/s took only ${slow%% *} s"; fi
stats=$(vmm_api "$COVE_RUNTIME_DIR/slow/root/api.sock" '{"op":"stats"}')
thr=$(echo "$stats" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["disk_throttled"], d["disk_throttled_ms"])')
echo "  stats: disk_throttled, disk_throttled_ms = $thr"
[ "${thr%% *}" -gt 0 ] 2>/dev/null && ok "the stats count throttled requests" || not_ok "stats: $stats"
rate=$($cove ls --json | python3 -c 'import json,sys; print([s["disk_bps"] for s in json.load(sys.stdin) if s["name"]=="slow"][0])')
[ "$rate" = $((16 * 1024 * 1024)) ] && ok "cove ls --json shows disk_bps $rate" || not_ok "ls disk_bps '$rate'"
finish
