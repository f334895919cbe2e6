/* What drives this machine's /dev/kvm: hardware VMX/SVM, nested, or PVM.
 * Read from /sys/module and /proc/cpuinfo; shared by cove-vmm (to explain
 * a KVM internal error), the KVM probe (lib/kvm_probe.c) and
 * `cove doctor`. */
#ifndef COVE_KVM_BACKEND_H
#define COVE_KVM_BACKEND_H

/* What drives /dev/kvm. */
enum kvm_backend {
	KVM_BACKEND_NONE,    /* no KVM module loaded */
	KVM_BACKEND_HW,      /* kvm_intel or kvm_amd on bare metal */
	KVM_BACKEND_NESTED,  /* kvm_intel or kvm_amd inside a VM (CPUID hypervisor bit) */
	KVM_BACKEND_PVM,     /* kvm_pvm: a software KVM that runs only PVM guest kernels */
	KVM_BACKEND_UNKNOWN, /* /dev/kvm exists but no module we know of */
};

/* The backend behind /dev/kvm, read from ROOT/sys/module and
 * ROOT/proc/cpuinfo; root is "" for this machine (tests pass a fake tree).
 * vendor (8 bytes, may be NULL) gets "vmx", "svm" or "". */
enum kvm_backend kvm_backend_detect(const char *root, char *vendor);

/* A short name for a backend: "hardware", "nested", "PVM", ... */
const char *kvm_backend_name(enum kvm_backend b);

#endif
