#!/usr/bin/env bash
# Guest users and exec defaults (docs/protocol.md "Exec", "Exec defaults"):
# cove exec -u runs as a user of the guest's /etc/passwd (ids, groups,
# HOME), an unknown one fails with one line; defaults set through libcove
# (env, cwd, user) apply to every exec without its own and survive a
# snapshot into its restores.
source tests/integration/lib.sh
cove_env
need "$ITEST_BIN/cove_client"

check "start" 0 "users" $cove start --name users
check "exec -u nobody: its ids and HOME" 0 "65534 65534 /nonexistent /" \
	$cove exec users -u nobody -- sh -c 'echo $(id -u) $(id -g) $HOME $(pwd)'
check "exec -u uid:gid without an entry" 0 "1234 5678 /" \
	$cove exec users -u 1234:5678 -- sh -c 'echo $(id -u) $(id -g) $HOME'
check "exec -u root: today's root" 0 "0 /root" $cove exec users -u root -- sh -c 'echo $(id -u) $(pwd)'
out=$($cove exec users -u bob -- true 2>&1)
rc=$?
[ $rc != 0 ] && [[ $out == *"user 'bob' is not in /etc/passwd"* ]] && ok "unknown user: $out" ||
	not_ok "unknown user: status $rc '$out'"
out=$($cove exec users -u 'a b' -- true 2>&1)
[ $? = 2 ] && ok "malformed user refused by the command line" || not_ok "malformed user: '$out'"

"$ITEST_BIN/cove_client" defaults users nobody /tmp COVE_D=dflt COVE_R=dflt 2>"$WORK/stderr" &&
	ok "defaults set" || not_ok "defaults: $(cat "$WORK/stderr")"
check "defaults: user, cwd, env under the exec's own" 0 "65534 /tmp dflt req" \
	$cove exec users -e COVE_R=req -- sh -c 'echo $(id -u) $(pwd) $COVE_D $COVE_R'
check "defaults: -u and -w win" 0 "0 /" $cove exec users -u root -w / -- sh -c 'echo $(id -u) $(pwd)'

snap="$WORK/snap"
if $cove snapshot users "$snap" --stop 2>"$WORK/stderr" &&
	$cove restore "$snap" --name users2 >/dev/null 2>>"$WORK/stderr"; then
	ok "snapshot and restore"
else
	not_ok "snapshot/restore: $(cat "$WORK/stderr")"
fi
check "a restore inherits the defaults" 0 "65534 /tmp dflt" \
	$cove exec users2 -- sh -c 'echo $(id -u) $(pwd) $COVE_D'
"$ITEST_BIN/cove_client" defaults users2 - - 2>"$WORK/stderr" && ok "defaults cleared" ||
	not_ok "clearing defaults: $(cat "$WORK/stderr")"
check "cleared: root again" 0 "0 /root" $cove exec users2 -- sh -c 'echo $(id -u) $(pwd)'
$cove stop users2 2>/dev/null
finish
