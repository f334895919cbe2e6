#!/usr/bin/env bash
# cove-vmm runs under seccomp filters by default: /proc/PID/status shows
# filter mode (Seccomp: 2), and every thread (main, each vCPU, I/O, API)
# has at least one filter of its own (Seccomp_filters >= 1).  The VM still
# boots and answers its control socket with the filters in kill mode.
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4
k=$(stage vmlinux build/vmlinux)
img=$(stage root.ext4 build/images/minimal.ext4)
con=$WORK/con.log
"$VMM" --kernel "$k" --memory 128 --cpus 2 --disk "$img,ro" --api "$WORK/api.sock" \
	--console "$con" --cmdline "$(guest_cmd 'echo guest-up; sleep 600')" >"$WORK/vmm.err" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$WORK"' EXIT
if ! wait_for "$con" '^guest-up' 120; then
	not_ok "guest did not come up"; tail -n 20 "$con" "$WORK/vmm.err"; finish
fi

mode=$(awk '/^Seccomp:/ {print $2}' /proc/$pid/status)
if [ "$mode" = 2 ]; then ok "Seccomp: 2 (filter mode)"; else not_ok "Seccomp: '$mode'"; fi

kinds=
bad=0
ours=0
for t in /proc/$pid/task/*; do
	n=$(awk '/^Seccomp_filters:/ {print $2}' "$t/status")
	comm=$(cat "$t/comm")
	echo "thread $(basename "$t") ($comm): Seccomp_filters: ${n:-none}"
	[ -n "$n" ] && [ "$n" -ge 1 ] || bad=1
	# KVM's own worker in the process (Linux 6.12's NX huge page
	# recovery, kvm-nx-lpage-recovery) is not one of cove-vmm's threads.
	[[ $comm == kvm-* ]] && continue
	kinds="$kinds $comm"
	ours=$((ours + 1))
done
if [ "$bad" = 0 ]; then ok "every thread has a filter"; else not_ok "a thread without a filter"; fi
# The four kinds: main, two vCPUs, the I/O loop and the API thread.
if [[ $kinds == *vcpu0* && $kinds == *vcpu1* && $kinds == *" io"* && $kinds == *" api"* ]] &&
	[ "$ours" = 5 ]; then
	ok "threads:$kinds"; else not_ok "threads:$kinds"; fi

reply=$(vmm_api "$WORK/api.sock" '{"op":"stats"}')
if [[ $reply == *'"ok":true'* && $reply == *'"vmm_rss_kb":'[1-9]* ]]; then
	ok "stats answered under the filters (smaps read through the fd opened at start)"
else not_ok "stats: $reply"; fi
reply=$(vmm_api "$WORK/api.sock" '{"op":"stop"}')
wait $pid
rc=$?
if [ $rc = 4 ]; then ok "stopped through the API (status 4), not killed"; else
	not_ok "cove-vmm status $rc after stop ($reply)"; tail -n 5 "$WORK/vmm.err"; fi
finish
