/* kvm_probe: can this machine's /dev/kvm run Cove's guest?
 *
 * Opening /dev/kvm and KVM_CREATE_VM are not enough: a PVM host
 * (kvm_pvm) accepts both and then fails at the guest kernel's first
 * `lock cmpxchg16b`.  kvm_probe_run() therefore boots a tiny 64-bit test
 * guest that executes what a Linux guest needs (long mode with paging,
 * cmpxchg16b, xsetbv/xsave/xrstor, wrmsr/rdmsr), after setting the CPUID
 * and the MSRs cove-vmm sets, and checks that it ran to its end.
 *
 * kvm_route_decide() is the pure decision built on that verdict: run
 * sandboxes directly, through the emulated host (scripts/kvm-host), or not
 * at all.  This file depends only on libc, the kernel headers and a few
 * small files of common/ (kvm_backend, clock), so scripts/kvm-probe can
 * build it, with those, before anything else is built. */
#ifndef COVE_KVM_PROBE_H
#define COVE_KVM_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include "kvm_backend.h"

enum kvm_probe_status {
	KVM_PROBE_WORKS,        /* the test guest ran to its end */
	KVM_PROBE_ABSENT,       /* no /dev/kvm */
	KVM_PROBE_NO_ACCESS,    /* /dev/kvm exists but cannot be opened (EACCES, EPERM) */
	KVM_PROBE_UNUSABLE,     /* opens, but the API, a capability or VM setup fails */
	KVM_PROBE_GUEST_FAILED, /* the test guest did not complete */
};

struct kvm_probe {
	enum kvm_probe_status status;
	enum kvm_backend backend;
	int err;            /* errno of the failing call, where there is one */
	char vendor[8];     /* "vmx", "svm" or "" (from /proc/cpuinfo) */
	char detail[200];   /* what failed, one line; "" when it works */
	unsigned int steps; /* test-guest steps completed */
};

/* Probes dev (normally "/dev/kvm") by running the test guest in a child
 * process, so a hang (bounded by timeout_s) or a crash there cannot touch
 * the caller.  Fills *p, backend included; returns p->status. */
enum kvm_probe_status kvm_probe_run(const char *dev, unsigned int timeout_s, struct kvm_probe *p);

/* Finds qemu-system-x86_64 in $PATH (the emulated host's engine); path
 * (may be NULL) gets where.  Returns whether it was found. */
bool kvm_emulator_find(char *path, size_t len);

enum kvm_route {
	KVM_ROUTE_DIRECT,   /* sandboxes run on this /dev/kvm */
	KVM_ROUTE_EMULATED, /* through scripts/kvm-host (QEMU TCG emulating SVM) */
	KVM_ROUTE_NONE,     /* cannot run here */
};

/* The decision, from the probe's verdict and whether the emulated host
 * can be used (qemu-system-x86_64 with SVM emulation).  why gets one line
 * saying why the route is not direct, naming the backend and the way out,
 * e.g. "/dev/kvm is PVM (kvm_pvm): it runs only PVM guest kernels; using
 * the emulated host"; "" for the direct route. */
enum kvm_route kvm_route_decide(const struct kvm_probe *p, bool emulator, char *why, size_t len);

#endif
