/* What one KVM exit means, decided from the kvm_run alone: a pure
 * function with no device access, no locks and no VM, so unit tests feed
 * it fabricated exits.  vcpu_handle_exit() (vcpu.c) acts on the decision:
 * it dispatches I/O to the buses and turns the rest into stop requests. */
#ifndef COVE_VCPU_EXIT_H
#define COVE_VCPU_EXIT_H

#include <linux/kvm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vcpu_exit_kind {
	VCPU_EXIT_RESUME, /* nothing to do: run again (a kick; I/O malformed by KVM's contract) */
	VCPU_EXIT_PIO,    /* port I/O: count items of size bytes at data */
	VCPU_EXIT_MMIO,   /* one MMIO access of size bytes at data */
	VCPU_EXIT_RESET,  /* the guest reset or shut down (KVM system event) */
	VCPU_EXIT_PANIC,  /* the guest reported a crash (KVM system event) */
	VCPU_EXIT_TRIPLE_FAULT, /* KVM_EXIT_SHUTDOWN */
	VCPU_EXIT_INTERNAL,     /* KVM_EXIT_INTERNAL_ERROR: the caller reads the vCPU */
	VCPU_EXIT_FAIL,         /* an exit Cove cannot handle; detail says which */
};

struct vcpu_exit {
	enum vcpu_exit_kind kind;
	uint64_t addr;  /* PIO: the port; MMIO: the guest-physical address */
	uint8_t *data;  /* PIO, MMIO: inside the kvm_run mapping, bounds-checked */
	uint32_t size;  /* bytes per item: 1..4 for PIO, 1..8 for MMIO */
	uint32_t count; /* PIO: items (string I/O); MMIO: 1 */
	bool is_write;
	char detail[128]; /* RESET, PANIC, TRIPLE_FAULT, INTERNAL, FAIL: one line */
};

/* Decides run's exit.  run_size bounds the I/O data area that
 * run->io.data_offset points into.  Never fails: anything unknown is
 * VCPU_EXIT_FAIL with a detail. */
void vcpu_decide(struct kvm_run *run, size_t run_size, struct vcpu_exit *out);

#endif
