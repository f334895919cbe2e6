#!/usr/bin/env bash
# --cpus 2 --memory 512: the guest sees 2 CPUs and about 512 MiB; with
# --cpus 4 it sees 4 (the MP table and CPUID topology are right).
source tests/integration/lib.sh
need build/vmlinux build/images/minimal.ext4
k=$(stage vmlinux build/vmlinux)
img=$(stage root.ext4 build/images/minimal.ext4)

for cpus in 2 4; do
	out=$WORK/smp$cpus.out
	vmm "$out" --kernel "$k" --disk "$img,ro" --cpus $cpus --memory 512 \
		--cmdline "$(guest_cmd 'echo CPUS=$(grep -c ^processor /proc/cpuinfo) MEMKB=$(sed -n "s/MemTotal: *\([0-9]*\) kB/\1/p" /proc/meminfo) CLOCK=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)')"
	rc=$?
	n=$(sed -n 's/^CPUS=\([0-9]*\).*/\1/p' "$out" | head -n1)
	mem=$(sed -n 's/.*MEMKB=\([0-9]*\).*/\1/p' "$out" | head -n1)
	clock=$(sed -n 's/.*CLOCK=\([a-z_-]*\).*/\1/p' "$out" | head -n1)
	if [ $rc = 0 ] && [ "$n" = $cpus ]; then ok "--cpus $cpus: guest sees $n CPUs"; else
		not_ok "--cpus $cpus: guest sees '${n}' CPUs (status $rc)"
		tail -n 20 "$out"
	fi
	# MemTotal excludes the kernel's own reservations: accept 440..512 MiB.
	if [ -n "$mem" ] && [ "$mem" -gt $((440 * 1024)) ] && [ "$mem" -le $((512 * 1024)) ]; then
		ok "--memory 512: MemTotal ${mem} kB"
	else
		not_ok "--memory 512: MemTotal '${mem}' kB"
	fi
	if [ "$clock" = kvm-clock ]; then ok "clocksource is kvm-clock"; else not_ok "clocksource '$clock'"; fi
done
finish
