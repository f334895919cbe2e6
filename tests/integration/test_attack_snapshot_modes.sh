#!/usr/bin/env bash
# A snapshot holds guest RAM (secrets included): its directory and every
# file in it are the user's alone, no group or other permission bits
# (directory 0700, memory/state/note 0600, the frozen disk 0400).
source tests/integration/lib.sh
cove_env
umask 022 # what a usual shell has: files would be world-readable by default
$cove start --name s >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
snap=$WORK/snap
$cove snapshot s "$snap" 2>"$WORK/err" || { not_ok "snapshot: $(cat "$WORK/err")"; finish; }
bad=0
while read -r mode owner path; do
	echo "  $mode $owner $path"
	[ $((8#$mode & 8#077)) = 0 ] && [ "$owner" = "$(id -u)" ] || bad=1
done < <(find "$snap" -exec stat -c '%a %u %n' {} +)
[ $bad = 0 ] && ok "no group/other bits on the snapshot or its files" ||
	not_ok "group/other bits or another owner (above)"
[ "$(stat -c %a "$snap")" = 700 ] && [ "$(stat -c %a "$snap/memory")" = 600 ] &&
	[ "$(stat -c %a "$snap/state")" = 600 ] && [ "$(stat -c %a "$snap/disk0.qcow2")" = 400 ] &&
	ok "modes 0700, 0600, 0600, 0400" || not_ok "modes differ"
finish
