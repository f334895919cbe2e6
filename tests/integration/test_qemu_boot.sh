#!/bin/bash
# Boot the Cove guest kernel and images under QEMU's microvm machine.
#
# Run from the repository root, on a machine with /dev/kvm (scripts/kvm-host), or
# anywhere with QEMU_ACCEL=tcg.  Needs build/vmlinux, build/bzImage (make kernel)
# and build/images/minimal.ext4 (make rootfs-minimal); build/images/debian.ext4
# (make rootfs-debian) is booted too when present.  Exits 77 (skip) when the
# kernel or the minimal image is not built.
#
# Environment: QEMU_ACCEL (kvm), QEMU_CPU (host for kvm, max otherwise),
#              BOOT_TIMEOUT (seconds per boot; 90 for kvm, 180 otherwise),
#              QEMU (qemu-system-x86_64).
set -euo pipefail

name=test_qemu_boot
accel=${QEMU_ACCEL:-kvm}
if [[ $accel == kvm ]]; then
    cpu=${QEMU_CPU:-host} limit=${BOOT_TIMEOUT:-90}
else
    cpu=${QEMU_CPU:-max} limit=${BOOT_TIMEOUT:-180}
fi
qemu=${QEMU:-qemu-system-x86_64}
build=build

failures=0
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; failures=$((failures + 1)); }

for f in "$build/vmlinux" "$build/bzImage" "$build/images/minimal.ext4"; do
    if [[ ! -f $f ]]; then
        echo "skip: $f is not built (make kernel rootfs-minimal)"
        exit 77
    fi
done
command -v "$qemu" >/dev/null || { echo "$name: $qemu not found" >&2; exit 1; }
if [[ $accel == kvm && ! -w /dev/kvm ]]; then
    echo "$name: /dev/kvm not usable; run under scripts/kvm-host or set QEMU_ACCEL=tcg" >&2
    exit 1
fi

# Work on copies in tmpfs: the repository may sit on a slow shared file system.
shm=/dev/shm
[[ -d $shm && -w $shm ]] || shm=${TMPDIR:-/tmp}
work=$(mktemp -d "$shm/cove-boot.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$build/vmlinux" "$build/bzImage" "$work/"

# boot KERNEL IMAGE LOG MEM EXTRA_CMDLINE [DRIVE_OPTS]: boot once; the guest's
# reset ends QEMU.  microvm has no keyboard controller unless asked for one;
# without it the reboot=k reset never reaches QEMU (the guest spins).
boot() {
    local kernel=$1 image=$2 log=$3 mem=$4 extra=$5 drive_opts=${6:-}
    # i8042.noaux: QEMU gives virtio-mmio.0 IRQ 12, the PS/2 AUX port's line.
    local cmdline="console=ttyS0 reboot=k panic=1 i8042.noaux i8042.nomux"
    cmdline+=" root=/dev/vda rw init=/init $extra"
    local rc=0
    timeout --kill-after=5 "$limit" "$qemu" \
        -M microvm,acpi=off,rtc=off,x-option-roms=off,isa-serial=on \
        -accel "$accel" -cpu "$cpu" -m "$mem" -smp 2 \
        -nodefaults -no-user-config -nographic -no-reboot \
        -serial stdio -device i8042 \
        -drive "id=root,file=$image,format=raw,if=none$drive_opts" \
        -device virtio-blk-device,drive=root \
        -kernel "$kernel" -append "$cmdline" \
        </dev/null >"$log" 2>&1 || rc=$?
    return "$rc"
}

b64() { printf '%s' "$1" | base64 -w0; }

# The printk time stamp of the line where the kernel starts init.
init_stamp() {
    sed -n 's/^\[ *\([0-9.]*\)\] Run .* as init process.*/\1/p' "$1" | head -n1
}

# check CASE LOG RC PATTERN...: QEMU exited cleanly and every pattern is in LOG.
check() {
    local case=$1 log=$2 rc=$3 pat
    shift 3
    if [[ $rc -ne 0 ]]; then
        if [[ $rc -eq 124 || $rc -eq 137 ]]; then
            not_ok "$case (no reset within ${limit}s)"
        else
            not_ok "$case (qemu exit status $rc)"
        fi
        tail -n 20 "$log" | sed 's/^/#   /'
        return
    fi
    for pat in "$@"; do
        if ! grep -qF -- "$pat" "$log"; then
            not_ok "$case (no '$pat' on the console)"
            tail -n 20 "$log" | sed 's/^/#   /'
            return
        fi
    done
    ok "$case (init started at $(init_stamp "$log")s)"
}

# shellcheck disable=SC2016 # expanded by the guest shell
cmd=$(b64 'echo "guest says $((6*7))"; exit 3')
for kernel in vmlinux bzImage; do
    log=$work/minimal-$kernel.log
    img=$work/minimal-$kernel.ext4
    cp --sparse=always "$build/images/minimal.ext4" "$img"
    rc=0
    boot "$work/$kernel" "$img" "$log" 256 "cove.cmd=$cmd" || rc=$?
    check "minimal image boots with $kernel and runs cove.cmd" "$log" "$rc" \
        "COVE-INIT-OK" "guest says 42" "COVE-CMD-EXIT 3"
done

if [[ -f $build/images/debian.ext4 ]]; then
    # Copy when tmpfs has room for the data; else boot the original, writes
    # going to a QEMU snapshot file.
    deb=$work/debian.ext4 opts=
    need=$(du -k "$build/images/debian.ext4" | cut -f1)
    free=$(df -Pk "$work" | awk 'NR == 2 { print $4 }')
    if ((free > need + 262144)); then
        cp --sparse=always "$build/images/debian.ext4" "$deb"
    else
        deb=$build/images/debian.ext4 opts=,snapshot=on
    fi
    log=$work/debian.log
    rc=0
    boot "$work/vmlinux" "$deb" "$log" 512 "cove.cmd=$(b64 "python3 -c 'print(6*7)'")" "$opts" || rc=$?
    if [[ $rc -eq 0 ]] && ! tr -d '\r' <"$log" | grep -x 42 >/dev/null; then
        not_ok "debian image runs python3 (no line '42' on the console)"
        tail -n 20 "$log" | sed 's/^/#   /'
    else
        check "debian image runs python3" "$log" "$rc" "COVE-INIT-OK" "COVE-CMD-EXIT 0"
    fi
fi

exit $((failures > 0))
