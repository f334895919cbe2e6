#!/usr/bin/env bash
# Bad input gets a one-line error naming the problem and status 1, before
# any VM exists; a guest panic gets status 2 and the panic's reason.
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4
k=$(stage vmlinux build/vmlinux)
img=$(stage root.ext4 build/images/minimal.ext4)
junk=$WORK/junk
head -c 4096 /dev/urandom >"$junk"
: >"$WORK/empty"
printf '{"kernel": "%s", "cpus": 1, "bogus": 1}' "$k" >"$WORK/bad.json"

# expect STATUS PATTERN ARGS...
expect() {
	local want=$1 pat=$2
	shift 2
	local out=$WORK/err.out
	vmm "$out" "$@"
	local rc=$?
	local lines
	lines=$(wc -l <"$out")
	if [ $rc = "$want" ] && grep -q -- "$pat" "$out" && [ "$lines" -le 1 ]; then
		ok "$* -> $rc: $(head -c 120 "$out")"
	else
		not_ok "$* -> status $rc (want $want), output: $(head -c 300 "$out")"
	fi
}
expect 1 'unknown option' --kernel "$k" --frobnicate
expect 1 'no kernel' --memory 256
expect 1 '--cpus' --kernel "$k" --cpus 0
expect 1 '--memory' --kernel "$k" --memory lots
expect 1 'cannot open kernel' --kernel /nonexistent/vmlinux
expect 1 'not a non-empty regular file' --kernel "$WORK/empty"
expect 1 'kernel' --kernel "$junk"
expect 1 'cannot open disk' --kernel "$k" --disk /nonexistent.img
expect 1 'at least 32 MiB' --kernel "$k" --memory 16
expect 1 "unknown key 'bogus'" --config "$WORK/bad.json"
expect 1 'unknown disk option' --kernel "$k" --disk "$img,fast"
# A second writer of one image is refused (the image is locked).
sleep_out=$WORK/holder.out
"$VMM" --kernel "$k" --disk "$img" --console none --cmdline "$(guest_cmd 'sleep 30')" >"$sleep_out" 2>&1 &
holder=$!
sleep 2
expect 1 'in use' --kernel "$k" --disk "$img"
kill "$holder" 2>/dev/null
wait "$holder"
rc=$?
[ $rc = 4 ] && ok "SIGTERM stops the VM with status 4" || not_ok "SIGTERM gave status $rc"
# No root device: the guest panics; cove-vmm says why and exits 2.
out=$WORK/panic.out
vmm "$out" --kernel "$k" --console none
rc=$?
if [ $rc = 2 ] && grep -q 'panic.*VFS' "$out"; then ok "guest panic -> 2: $(cat "$out")"; else
	not_ok "guest panic -> status $rc: $(tail -n 3 "$out")"
fi
finish
