#!/usr/bin/env bash
# The jail, seen from the host: a running cove-vmm has no capabilities,
# no_new_privs, a seccomp filter on every thread, a uid of its own when root
# started it, a root holding only the jail's files, and mount, PID and
# network namespaces other than the host's; started by a user without
# privileges it runs in a user namespace as that user.
source tests/integration/lib.sh
cove_env

field() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$2/status"; }

# check_vmm PID WANT_UID LABEL: the confinement every cove-vmm has.
check_vmm() {
	local pid=$1 want_uid=$2 what=$3 bad=""
	[ "$(field CapEff "$pid")" = 0000000000000000 ] || bad+=" CapEff=$(field CapEff "$pid")"
	[ "$(field CapBnd "$pid")" = 0000000000000000 ] || bad+=" CapBnd=$(field CapBnd "$pid")"
	[ "$(field NoNewPrivs "$pid")" = 1 ] || bad+=" NoNewPrivs=$(field NoNewPrivs "$pid")"
	[ "$(field Seccomp "$pid")" = 2 ] || bad+=" Seccomp=$(field Seccomp "$pid")"
	local t
	for t in /proc/"$pid"/task/*; do
		[ "$(awk '$1 == "Seccomp_filters:" { print $2 }' "$t/status")" -ge 1 ] ||
			bad+=" thread $(basename "$t") has no filter"
	done
	local uid
	uid=$(field Uid "$pid")
	[ "$uid" = "$want_uid" ] || bad+=" uid=$uid (want $want_uid)"
	if [ -z "$bad" ]; then ok "$what: CapEff 0, CapBnd 0, NoNewPrivs 1, Seccomp 2 on every thread, uid $uid"; else
		not_ok "$what:$bad"; fi
	local files
	files=$(cd "/proc/$pid/root" && find . -mindepth 1 | sort | tr '\n' ' ')
	if [ "$files" = "./api.sock ./dev ./dev/kvm ./dev/urandom ./disk0.qcow2 ./vsock " ]; then
		ok "$what: its root holds only the jail's files: $files"; else
		not_ok "$what: its root holds: $files"; fi
	local n same=""
	for n in mnt pid net ipc uts; do
		[ "$(readlink "/proc/$pid/ns/$n")" != "$(readlink /proc/self/ns/$n)" ] || same+=" $n"
	done
	if [ -z "$same" ]; then ok "$what: mnt, pid, net, ipc and uts namespaces are its own"; else
		not_ok "$what: shares the host's namespaces:$same"; fi
}

# Root launches it: a uid from the jail range.
$cove start --name j >/dev/null 2>"$WORK/err" || { not_ok "start: $(cat "$WORK/err")"; finish; }
pid=$(meta_pid j)
uid=$(field Uid "$pid")
if [ "$uid" -ge 1900000000 ]; then ok "root's sandbox runs as uid $uid, from the jail range"; else
	not_ok "root's sandbox runs as uid $uid"; fi
check_vmm "$pid" "$uid" "root's sandbox"
if grep -q "^cove: confinement: namespaces pid mnt ipc uts net, pivot_root, uid/gid $uid" \
	"$COVE_RUNTIME_DIR/j/vmm.log" && grep -q "^cove-vmm: jail: pivot_root into" "$COVE_RUNTIME_DIR/j/vmm.log"; then
	ok "the start log says how it is confined"; else not_ok "start log: $(head -3 "$COVE_RUNTIME_DIR/j/vmm.log")"; fi
cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
if [ "$cg" = /cove/j ] && [ "$(cat /sys/fs/cgroup/cove/j/memory.max)" -gt $((256 << 20)) ]; then
	ok "it runs in its own cgroup $cg, memory.max $(cat /sys/fs/cgroup/cove/j/memory.max)"; else
	not_ok "cgroup '$cg'"; fi
out=$($cove exec j -- sh -c 'echo hi > /root/f && cat /root/f' 2>&1)
[ "$out" = hi ] && ok "the jailed sandbox runs commands" || not_ok "exec in the jail: $out"
$cove stop j >/dev/null
if [ ! -d /sys/fs/cgroup/cove/j ] && [ -z "$(ls -A "$COVE_RUNTIME_DIR/.ids" 2>/dev/null)" ]; then
	ok "stop removes the cgroup and frees the uid"; else
	not_ok "left behind: $(ls /sys/fs/cgroup/cove) / $(ls "$COVE_RUNTIME_DIR/.ids")"; fi

# A user without privileges (who may use /dev/kvm): a user namespace.
user=4321
chmod 0666 /dev/kvm
urt=$WORK/urt
mkdir -m 0700 "$urt" && chown $user:$user "$urt"
chmod 0755 "$WORK"
chmod 0644 "$COVE_KERNEL" "$COVE_IMAGE"
chmod 0755 "$(dirname "$COVE_KERNEL")"
as_user() { setpriv --reuid $user --regid $user --clear-groups env COVE_RUNTIME_DIR="$urt" "$@"; }
if as_user $cove start --name u >/dev/null 2>"$WORK/uerr"; then
	upid=$(meta_pid u "$urt")
	check_vmm "$upid" "$user" "an unprivileged user's sandbox"
	if grep -q "user namespace" "$urt/u/vmm.log"; then ok "its start log names the user namespace"; else
		not_ok "user start log: $(head -2 "$urt/u/vmm.log")"; fi
	out=$(as_user $cove exec u -- echo from-user 2>&1)
	[ "$out" = from-user ] && ok "the user's sandbox runs commands" || not_ok "user exec: $out"
	as_user $cove stop u >/dev/null
else
	not_ok "unprivileged start: $(cat "$WORK/uerr")"
fi

# Where no user namespace may be made: seccomp and no_new_privs only, and
# the start log says so.
max=$(cat /proc/sys/user/max_user_namespaces)
echo 0 >/proc/sys/user/max_user_namespaces
if as_user $cove start --name v >/dev/null 2>"$WORK/verr"; then
	vpid=$(meta_pid v "$urt")
	bad=""
	[ "$(field CapEff "$vpid")" = 0000000000000000 ] || bad+=" CapEff"
	[ "$(field NoNewPrivs "$vpid")" = 1 ] || bad+=" NoNewPrivs"
	[ "$(field Seccomp "$vpid")" = 2 ] || bad+=" Seccomp"
	[ "$(field Uid "$vpid")" = $user ] || bad+=" Uid"
	if [ -z "$bad" ] && grep -q "seccomp and no_new_privs" "$urt/v/vmm.log"; then
		ok "without user namespaces: seccomp and no_new_privs only, and the log says so"; else
		not_ok "fallback:$bad; log: $(head -2 "$urt/v/vmm.log")"; fi
	as_user $cove stop v >/dev/null
else
	not_ok "start without user namespaces: $(cat "$WORK/verr")"
fi
echo "$max" >/proc/sys/user/max_user_namespaces
finish
