#!/usr/bin/env bash
# cove run and libcove against real sandboxes: output and exit statuses,
# signals, stdin, large output, concurrency, timeouts, file transfer, a
# terminal, isolation from the host, and a malformed frame.
source tests/integration/lib.sh
need "$BIN/cove" "$BIN/cove-vmm" build/bin/cove-agent build/vmlinux build/images/minimal.ext4
# The kernel and image are read from tmpfs, not the slow 9p share.
export COVE_KERNEL=$(stage_shared vmlinux build/vmlinux)
export COVE_IMAGE=$(stage_shared minimal.ext4 build/images/minimal.ext4)
export COVE_VMM=$PWD/$BIN/cove-vmm
cove=$BIN/cove

check "echo" 0 "hello world" $cove run -- echo hello world
check "exit 0" 0 "" $cove run -- true
check "exit 3" 3 "" $cove run -- sh -c 'exit 3'
check "exit 255" 255 "" $cove run -- sh -c 'exit 255'
check "killed by SIGKILL gives 137" 137 "" $cove run -- sh -c 'kill -9 $$'
check "killed by SIGTERM gives 143" 143 "" $cove run -- sh -c 'kill -TERM $$'
out=$($cove run -- sh -c 'echo to-out; echo to-err >&2' 2>"$WORK/err")
if [ "$out" = to-out ] && [ "$(cat "$WORK/err")" = to-err ]; then ok "stderr apart from stdout"; else
	not_ok "stderr apart: out '$out' err '$(cat "$WORK/err")'"
fi
check "stdin piped through" 0 "3" sh -c "printf 'a\nb\nc\n' | $cove run -- wc -l"
check "env and workdir" 0 "bar /tmp" $cove run -e FOO=bar -w /tmp -- sh -c 'echo $FOO $(pwd)'

# 100 MiB of output, checked end to end.
want=$(head -c $((100 << 20)) /dev/zero | tr '\0' 'x' | sha256sum | cut -c1-64)
got=$($cove run -- sh -c 'head -c 104857600 /dev/zero | tr "\0" x' | sha256sum | cut -c1-64)
[ "$want" = "$got" ] && ok "100 MiB of output, sha256 matches" || not_ok "100 MiB output: sha256 $got, want $want"

# --timeout kills the command and gives 124.
start=$(date +%s)
check "--timeout gives 124" 124 "" $cove run --timeout 2 -- sleep 60
[ $(($(date +%s) - start)) -lt 45 ] && ok "--timeout ended it early" || not_ok "--timeout took too long"

# --put and --get of a 100 MiB file.
head -c $((100 << 20)) /dev/urandom >"$WORK/big"
sum=$(sha256sum <"$WORK/big" | cut -c1-64)
out=$($cove run --cold --memory 512 --put "$WORK/big:/tmp/big" --get "/tmp/big:$WORK/back" -- sh -c 'sha256sum /tmp/big | cut -c1-64')
back=$(sha256sum <"$WORK/back" | cut -c1-64)
if [ "$out" = "$sum" ] && [ "$back" = "$sum" ]; then ok "--put/--get of 100 MiB, sha256 matches both ways"; else
	not_ok "--put/--get: guest '$out', back '$back', want '$sum'"
fi

# -it under a pseudo-terminal: the guest sees a terminal.
out=$(script -qec "$cove run -it -- sh -c 'test -t 0 && test -t 1 && echo IS-A-TTY'" /dev/null </dev/null | tr -d '\r')
case "$out" in *IS-A-TTY*) ok "-it gives the command a terminal" ;; *) not_ok "-it: '$out'" ;; esac

# The guest cannot see the host's files.
marker=/tmp/cove-host-marker-$$
echo secret >"$marker"
check "host files are invisible in the guest" 0 "absent" $cove run -- sh -c "test -e $marker && echo present || echo absent"
rm -f "$marker"

# Bad input: clear one-line errors.
out=$($cove run --cpus 0 -- true 2>&1)
[ $? = 2 ] && [[ $out == *--cpus* ]] && ok "bad flag: $out" || not_ok "bad flag: '$out'"
out=$(COVE_IMAGE=/nonexistent.ext4 $cove run -- true 2>&1)
[ $? = 125 ] && [[ $out == *nonexistent* ]] && ok "missing image: $out" || not_ok "missing image: '$out'"
out=$($cove run -- /no/such/program 2>&1)
rc=$?
[ $rc = 127 ] && [[ $out == *such* ]] && ok "missing program: status $rc, $out" || not_ok "missing program: $rc '$out'"

# The Debian image (when built: make rootfs-debian) runs the agent under
# its own root and has python3.
if [ -f build/images/debian.ext4 ]; then
	deb=$(stage debian.ext4 build/images/debian.ext4)
	check "debian image: python3 runs" 0 "42" env COVE_IMAGE="$deb" $cove run --cold --memory 512 -- python3 -c 'print(6*7)'
	rm -f "$deb"
else
	echo "skip: debian image not built"
fi

# libcove: 64 concurrent execs, and a malformed frame.
"$ITEST_BIN/cove_client" concurrent 64 && ok "64 concurrent execs" || not_ok "concurrent execs"
"$ITEST_BIN/cove_client" malformed && ok "the agent survives a malformed frame" || not_ok "malformed frame"
finish
