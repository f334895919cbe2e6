#!/usr/bin/env bash
# cove-vmm binds its control socket (--api) and the hybrid-vsock listener
# (--vsock) mode 0600 even under umask 000.
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4
k=$(stage vmlinux build/vmlinux)
img=$(stage root.ext4 build/images/minimal.ext4)
con=$WORK/con.log
(umask 000; exec "$VMM" --kernel "$k" --memory 128 --disk "$img,ro" --api "$WORK/api.sock" \
	--vsock "$WORK/vsock" --console "$con" --cmdline "$(guest_cmd 'echo guest-up; sleep 600')" \
	>"$WORK/vmm.err" 2>&1) &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$WORK"' EXIT
if ! wait_for "$con" '^guest-up' 120; then
	not_ok "guest did not come up"; tail -n 20 "$con" "$WORK/vmm.err"; finish
fi
for s in api.sock vsock; do
	m=$(stat -c %a "$WORK/$s")
	if [ "$m" = 600 ]; then ok "$s is mode 600 under umask 000"; else not_ok "$s is mode $m"; fi
done
vmm_api "$WORK/api.sock" '{"op":"stop"}' >/dev/null
wait $pid
finish
