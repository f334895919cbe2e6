# Shared helpers for integration tests (sourced; runs inside scripts/kvm-host).
# Kernel and images are copied to tmpfs first: the emulated host's 9p share
# is slow and would dominate every boot.
set -u

# COVE_BIN_DIR, COVE_ITEST_DIR: where cove, cove-vmm and the helper programs
# come from (the sanitized pass, tests/integration/run, gives build/san's).
BIN=${COVE_BIN_DIR:-build/bin}
ITEST_BIN=${COVE_ITEST_DIR:-build/itest}
VMM=${VMM:-$BIN/cove-vmm}
WORK=$(mktemp -d /tmp/cove-itest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# Templates (lib/template.h): `cove run` restores from base templates built
# on first use.  tests/integration/run gives the suite one store and one
# staging directory (COVE_ITEST_STAGE), so a base template is built once for
# the whole suite; a test run alone gets its own, removed with $WORK.
export COVE_TEMPLATE_DIR=${COVE_TEMPLATE_DIR:-$WORK/templates}

ok() { echo "ok - $*"; }
# A failure is also kept for the suite's summary (tests/integration/run).
not_ok() {
	echo "not ok - $*"
	FAILED=1
	local m="$*"
	[ -z "${COVE_ITEST_WHY:-}" ] || echo "not ok - ${m:0:300}" >>"$COVE_ITEST_WHY"
}
FAILED=0

# need FILE...: skip the test (status 77) when an artifact was not built.
need() {
	for f in "$@"; do
		[ -e "$f" ] || { echo "skip: $f is not built"; exit 77; }
	done
}

# cove_env [RUNTIME_DIR]: what the CLI tests share: cove, cove-vmm, the
# kernel and the minimal image staged on tmpfs, and a registry of the
# test's own (default $WORK/rt) so other sandboxes do not show; sets $cove
# and traps EXIT to stop every sandbox left there and remove $WORK (and
# RUNTIME_DIR when one was given).
cove_env() {
	need "$BIN/cove" "$BIN/cove-vmm" build/vmlinux build/images/minimal.ext4
	COVE_KERNEL=$(stage_shared vmlinux build/vmlinux)
	COVE_IMAGE=$(stage_shared minimal.ext4 build/images/minimal.ext4)
	export COVE_KERNEL COVE_IMAGE COVE_VMM=$PWD/$BIN/cove-vmm
	export COVE_RUNTIME_DIR=${1:-$WORK/rt}
	cove_own_rt=${1:-}
	cove=$BIN/cove
	trap cove_cleanup EXIT
}

cove_cleanup() {
	local d
	for d in "$COVE_RUNTIME_DIR"/*/; do
		[ -d "$d" ] && $cove stop "$(basename "$d")" >/dev/null 2>&1
	done
	rm -rf "$WORK" ${cove_own_rt:+"$cove_own_rt"}
}

# stage NAME SRC: copy SRC to tmpfs (sparse) and print the copy's path.
stage() {
	cp --sparse=always "$2" "$WORK/$1"
	echo "$WORK/$1"
}

# stage_shared NAME SRC: stage SRC once for the whole suite (into
# $COVE_ITEST_STAGE, which tests/integration/run makes; the same paths in
# every test, so base templates and their hash cache are shared); a test
# run alone stages into $WORK.  Tests must not write the copy.
stage_shared() {
	[ -n "${COVE_ITEST_STAGE:-}" ] && [ -d "$COVE_ITEST_STAGE" ] || { stage "$@"; return; }
	if [ ! -e "$COVE_ITEST_STAGE/$1" ]; then
		cp --sparse=always "$2" "$COVE_ITEST_STAGE/.$1.$$" &&
			mv -n "$COVE_ITEST_STAGE/.$1.$$" "$COVE_ITEST_STAGE/$1"
		rm -f "$COVE_ITEST_STAGE/.$1.$$"
	fi
	echo "$COVE_ITEST_STAGE/$1"
}

# guest_cmd 'shell command': the kernel arguments that make the images'
# /init script run it (rootfs/init: base64 in cove.cmd=).
guest_cmd() {
	printf 'init=/init cove.cmd=%s' "$(printf '%s' "$1" | base64 -w0)"
}

# vmm OUT ARGS...: run cove-vmm with a 120 s limit, console and stderr into
# OUT; prints nothing, returns cove-vmm's status.
vmm() {
	local out=$1
	shift
	timeout -k 5 120 "$VMM" "$@" >"$out" 2>&1 </dev/null
}

# gx NAME 'shell command': runs it in sandbox NAME (2 min limit); prints
# stdout and stderr together and returns its status.
gx() {
	timeout -k 5 120 $cove exec "$1" -- sh -c "$2" 2>&1
}

# check NAME WANT_STATUS WANT_STDOUT CMD...: CMD gives that status and
# exactly that stdout.
check() {
	local name=$1 want=$2 want_out=$3
	shift 3
	local out rc
	out=$("$@" 2>"$WORK/stderr")
	rc=$?
	if [ "$rc" = "$want" ] && [ "$out" = "$want_out" ]; then ok "$name"; else
		not_ok "$name: status $rc (want $want), stdout '$out' (want '$want_out'), stderr: $(head -c 300 "$WORK/stderr")"
	fi
}

# meta_pid NAME [RUNTIME_DIR]: the pid of sandbox NAME's cove-vmm, from its
# meta.json (in $COVE_RUNTIME_DIR by default).
meta_pid() {
	sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "${2:-$COVE_RUNTIME_DIR}/$1/meta.json"
}

# sha TEXT: TEXT's SHA-256 in hex.
sha() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }

finish() {
	[ "$FAILED" = 0 ]
	exit $?
}

# vmm_api SOCKET JSON: one request to cove-vmm's control socket; prints the
# reply line.
vmm_api() {
	python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(300)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
buf = b""
while not buf.endswith(b"\n"):
    chunk = s.recv(4096)
    if not chunk:
        break
    buf += chunk
print(buf.decode().strip())
PY
}

# wait_for FILE REGEX [SECONDS]: until FILE has a line matching REGEX.
wait_for() {
	local i
	for ((i = 0; i < ${3:-120} * 10; i++)); do
		grep -qE "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# snap_patch STATE-FILE TAG EXPR: rewrites sections of a snapshot state file
# with a Python expression over `d` (the section's bytearray) and fixes both
# CRCs, to build snapshots that are well-formed but do not fit the host.
snap_patch() {
	python3 - "$@" <<'PY'
import struct, sys, zlib
path, tag, expr = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
b = bytearray(open(path, "rb").read())
off = 32
while off < len(b):
    t, inst, ln = struct.unpack_from("<4sIQ", b, off)
    start = off + 16
    if t == tag:
        d = bytearray(b[start:start + ln])
        exec(expr)
        b[start:start + ln] = d
    off = start + ((ln + 7) & ~7)
struct.pack_into("<I", b, 24, zlib.crc32(bytes(b[32:])))
struct.pack_into("<I", b, 28, zlib.crc32(bytes(b[:28])))
open(path, "wb").write(b)
PY
}
