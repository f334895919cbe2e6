#!/usr/bin/env bash
# A guest writes a qcow2 header naming a host file as its backing file onto
# a raw, writable extra disk.  Started again with that disk and no format=,
# cove-vmm opens it as raw (never probed): the guest reads back its own
# bytes, not the host file's.
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4 "$VMM"
k=$(stage vmlinux build/vmlinux)
img=$(stage root.ext4 build/images/minimal.ext4)
secret=$WORK/host-secret
python3 -c 'import sys; open(sys.argv[1], "wb").write(b"HOSTSECRET-" * 100000)' "$secret"
data=$WORK/data.raw
truncate -s 4M "$data"
# A qcow2 v3 header (64 KiB clusters, 1 MiB, empty tables) whose backing
# file is the secret, then its name.
hdr=$(python3 - "$secret" <<'PY'
import base64, struct, sys
name = sys.argv[1].encode()
h = struct.pack(">4sIQIIQIIQQIIQQQQII", b"QFI\xfb", 3, 112, len(name), 16, 1 << 20, 0,
                1, 3 << 16, 1 << 16, 1, 0, 0, 0, 0, 0, 4, 104)
h = h[:104] + b"\0" * 8  # end of the header extensions
print(base64.b64encode(h + name).decode())
PY
)
vmm "$WORK/w.out" --kernel "$k" --disk "$img,ro" --disk "$data" --cmdline "$(guest_cmd "
	echo $hdr | base64 -d > /tmp/h && dd if=/tmp/h of=/dev/vdb conv=fsync 2>/dev/null &&
	echo WROTE \$(sha256sum /tmp/h | cut -c1-64)")"
want=$(echo "$hdr" | base64 -d | sha256sum | cut -c1-64)
grep -q "WROTE $want" "$WORK/w.out" && ok "guest wrote the header" ||
	{ not_ok "write boot: $(tail -n 5 "$WORK/w.out")"; finish; }
head -c 4 "$data" | od -An -c | grep -q 'Q   F   I' && ok "the raw file now starts with QFI" ||
	not_ok "no qcow2 magic in the raw file"
n=$(echo "$hdr" | base64 -d | wc -c)
vmm "$WORK/r.out" --kernel "$k" --disk "$img,ro" --disk "$data" --cmdline "$(guest_cmd "
	echo READ \$(head -c $n /dev/vdb | sha256sum | cut -c1-64) SECRETS=\$(grep -c HOSTSECRET /dev/vdb)")"
rc=$?
if [ $rc = 0 ] && grep -q "READ $want SECRETS=0" "$WORK/r.out"; then
	ok "the guest reads its own bytes, none of the host file's"; else
	not_ok "status $rc: $(grep -a 'READ\|disk\|qcow2' "$WORK/r.out" | tail -n 5)"; fi
finish
