#!/usr/bin/env bash
# console.log planted as a symlink to a victim file is not followed: the
# victim keeps its bytes, and cove-vmm refuses the console in one line
# instead of writing the guest's output through the link.
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4 build/bin/cove-vmm
k=$(stage vmlinux build/vmlinux)
img=$(stage root.ext4 build/images/minimal.ext4)
victim=$WORK/victim
echo "precious bytes" >"$victim"
sum=$(sha256sum <"$victim")
ln -s "$victim" "$WORK/console.log"
timeout -k 5 120 "$VMM" --kernel "$k" --disk "$img,ro" --console "$WORK/console.log" \
	--cmdline "$(guest_cmd 'echo GUEST-WROTE-THIS')" >"$WORK/vmm.out" 2>&1 </dev/null
rc=$?
[ "$(sha256sum <"$victim")" = "$sum" ] && ok "victim unchanged" ||
	not_ok "victim changed: $(head -c 200 "$victim")"
if [ $rc != 0 ] && grep -qi console "$WORK/vmm.out"; then
	ok "start refused (status $rc): $(grep -i console "$WORK/vmm.out" | head -n1)"; else
	not_ok "status $rc: $(tail -n 3 "$WORK/vmm.out")"; fi
finish
