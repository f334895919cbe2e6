# Shared helpers for integration tests (sourced; runs inside scripts/kvm-host).
# Kernel and images are copied to tmpfs first: the emulated host's 9p share
# is slow and would dominate every boot.
set -u

VMM=${VMM:-build/bin/cove-vmm}
WORK=$(mktemp -d /tmp/cove-itest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILED=1; }
FAILED=0

# need FILE...: skip the test (status 77) when an artifact was not built.
need() {
	for f in "$@"; do
		[ -e "$f" ] || { echo "skip: $f is not built"; exit 77; }
	done
}

# stage NAME SRC: copy SRC to tmpfs (sparse) and print the copy's path.
stage() {
	cp --sparse=always "$2" "$WORK/$1"
	echo "$WORK/$1"
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

finish() {
	[ "$FAILED" = 0 ]
	exit $?
}
