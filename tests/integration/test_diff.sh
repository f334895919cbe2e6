#!/usr/bin/env bash
# cove diff: an agent-like session in a sandbox (write and edit files,
# delete a file of the image, chmod, a symlink, a 20 MB file, a directory
# rename), then `cove diff` lists exactly those paths against the image,
# with the right kinds and SHA-256 (checked against sha256sum in the
# guest), while the guest runs (its / frozen and thawed by the agent);
# then paused, right after a sync (the new inodes are in the journal, not
# yet in place: the diff replays it), and as a tar.  One boot.
source tests/integration/lib.sh
cove_env

check "start" 0 "dt" $cove start --name dt
# What the guest itself changes by booting: left out of the comparison.
if $cove diff dt >"$WORK/before" 2>"$WORK/stderr"; then ok "diff of a fresh sandbox ($(wc -l <"$WORK/before") paths)"; else
	not_ok "diff of a fresh sandbox: $(cat "$WORK/stderr")"
fi
check "the guest writes again after the diff's thaw" 0 "" $cove exec dt -- touch /root/thawed
$cove exec dt -- rm /root/thawed

$cove exec dt -- sh -c '
	set -e
	echo hello >/root/new.txt
	echo "export EDITED=1" >>/etc/profile
	rm /etc/hosts
	chmod 640 /etc/group
	ln -s /etc/profile /root/link
	head -c 20971520 /dev/urandom >/root/big.bin
	mv /mnt /mnt2
	sync' 2>"$WORK/stderr" && ok "the session's changes" || not_ok "session: $(cat "$WORK/stderr")"
sums=$($cove exec dt -- sha256sum /root/big.bin /root/new.txt /etc/profile)

want='A /mnt2
A /root/big.bin
A /root/link
A /root/new.txt
C /etc
C /etc/group
C /etc/profile
C /root
D /etc/hosts
D /mnt'
# A directory the boot had changed already is in both lists.
want=$(comm -23 <(echo "$want") <(sort "$WORK/before"))
# diff NAME OUT: cove diff's text, less what the fresh sandbox showed.
new_paths() {
	sort "$1" | comm -23 - <(sort "$WORK/before")
}
if $cove diff dt >"$WORK/after" 2>"$WORK/stderr"; then
	got=$(new_paths "$WORK/after")
	[ "$got" = "$want" ] && ok "running: exactly the session's paths" ||
		not_ok "running: got '$(echo $got)', want '$(echo $want)'"
else
	not_ok "diff while running: $(cat "$WORK/stderr")"
fi

# JSON: kinds, types, modes, the hashes the guest computed, the target.
$cove diff dt --json >"$WORK/diff.json" 2>"$WORK/stderr" || not_ok "diff --json: $(cat "$WORK/stderr")"
python3 - "$WORK/diff.json" "$sums" <<'PY' && ok "json: hashes, modes, types, target" || not_ok "json check failed"
import json, sys
d = {c["path"]: c for c in json.load(open(sys.argv[1]))["changes"]}
sums = {l.split()[1]: l.split()[0] for l in sys.argv[2].splitlines()}
def want(cond, what):
    if not cond:
        print("json:", what, file=sys.stderr)
        sys.exit(1)
for p, s in sums.items():
    want(d[p].get("sha256") == s, p + " sha256")
want(d["/root/big.bin"]["size"] == 20971520 and d["/root/big.bin"]["kind"] == "added", "big.bin")
want(d["/etc/profile"]["kind"] == "changed" and d["/etc/profile"]["size"] > d["/etc/profile"]["old"]["size"], "profile")
want(d["/etc/group"]["mode"] == 0o640 and d["/etc/group"]["old"]["mode"] == 0o644, "group mode")
want(d["/root/link"]["type"] == "symlink" and d["/root/link"]["target"] == "/etc/profile", "link")
want(d["/etc/hosts"]["kind"] == "deleted" and d["/etc/hosts"]["type"] == "file", "hosts")
want(d["/mnt2"]["type"] == "dir" and d["/mnt"]["kind"] == "deleted", "rename")
PY

# Paused right after a sync: the newest inode is in the journal only.
$cove exec dt -- sh -c 'echo late >/root/late.txt && sync'
api=$COVE_RUNTIME_DIR/dt/root/api.sock
vmm_api "$api" '{"op":"pause"}' >/dev/null
if $cove diff dt >"$WORK/paused" 2>"$WORK/stderr"; then
	grep -qx 'A /root/late.txt' "$WORK/paused" && ok "paused: the file written last is there" ||
		not_ok "paused: no A /root/late.txt in '$(echo $(cat "$WORK/paused"))'"
else
	not_ok "diff while paused: $(cat "$WORK/stderr")"
fi
if $cove diff dt --tar "$WORK/d.tar" >/dev/null 2>"$WORK/stderr"; then
	mkdir "$WORK/x" && tar -xf "$WORK/d.tar" -C "$WORK/x" 2>>"$WORK/stderr"
	big=$(sha256sum <"$WORK/x/root/big.bin" 2>/dev/null | cut -c1-64)
	[[ $sums == *"$big  /root/big.bin"* ]] && [ -L "$WORK/x/root/link" ] && [ ! -e "$WORK/x/etc/hosts" ] &&
		ok "tar: the changed files, the symlink, no deleted file" || not_ok "tar contents wrong"
else
	not_ok "diff --tar: $(cat "$WORK/stderr")"
fi
vmm_api "$api" '{"op":"resume"}' >/dev/null
check "resumed after the paused diff" 0 "late" $cove exec dt -- cat /root/late.txt
finish
