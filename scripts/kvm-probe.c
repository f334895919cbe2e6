/* kvm-probe: lib/vmm/kvm_probe.c's verdict for scripts/kvm-probe.  Prints one
 * line, "direct" or why sandboxes cannot run directly on DEV (default
 * /dev/kvm), then the probe's detail when there is one; exits 0 (direct),
 * 1 (through the emulated host) or 2 (cannot run here). */
#include <stdio.h>

#include "lib/vmm/kvm_probe.h"

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "/dev/kvm";
	struct kvm_probe p;
	char why[512];
	kvm_probe_run(dev, 10, &p);
	enum kvm_route r = kvm_route_decide(&p, kvm_emulator_find(NULL, 0), why, sizeof(why));
	printf("%s\n", r == KVM_ROUTE_DIRECT ? "direct" : why);
	if (p.detail[0])
		printf("probe: backend %s, %s\n", kvm_backend_name(p.backend), p.detail);
	return r == KVM_ROUTE_DIRECT ? 0 : r == KVM_ROUTE_EMULATED ? 1 : 2;
}
