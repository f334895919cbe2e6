#include "core/vcpu_exit.h"

#include <stdio.h>
#include <string.h>

#include "kvm_caps.h"

static void decide_io(struct kvm_run *run, size_t run_size, struct vcpu_exit *x)
{
	uint32_t size = run->io.size, count = run->io.count;
	uint64_t off = run->io.data_offset;
	uint64_t bytes = (uint64_t)size * count;
	/* Malformed by KVM's own contract: ignore rather than trust it. */
	if (size == 0 || size > 4 || off > run_size || bytes > run_size - off)
		return;
	x->kind = VCPU_EXIT_PIO;
	x->addr = run->io.port;
	x->data = (uint8_t *)run + off;
	x->size = size;
	x->count = count;
	x->is_write = run->io.direction == KVM_EXIT_IO_OUT;
}

void vcpu_decide(struct kvm_run *run, size_t run_size, struct vcpu_exit *x)
{
	memset(x, 0, sizeof(*x));
	x->kind = VCPU_EXIT_RESUME;
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		decide_io(run, run_size, x);
		return;
	case KVM_EXIT_MMIO:
		if (run->mmio.len == 0 || run->mmio.len > sizeof(run->mmio.data))
			return;
		x->kind = VCPU_EXIT_MMIO;
		x->addr = run->mmio.phys_addr;
		x->data = run->mmio.data;
		x->size = run->mmio.len;
		x->count = 1;
		x->is_write = run->mmio.is_write;
		return;
	case KVM_EXIT_INTR:
		return;
	case KVM_EXIT_SHUTDOWN:
		x->kind = VCPU_EXIT_TRIPLE_FAULT;
		snprintf(x->detail, sizeof(x->detail), "triple fault (KVM_EXIT_SHUTDOWN)");
		return;
	case KVM_EXIT_SYSTEM_EVENT:
		switch (run->system_event.type) {
		case KVM_SYSTEM_EVENT_RESET:
		case KVM_SYSTEM_EVENT_SHUTDOWN:
			x->kind = VCPU_EXIT_RESET;
			snprintf(x->detail, sizeof(x->detail), "guest system event");
			return;
		case KVM_SYSTEM_EVENT_CRASH:
			x->kind = VCPU_EXIT_PANIC;
			snprintf(x->detail, sizeof(x->detail), "guest crash event");
			return;
		default:
			x->kind = VCPU_EXIT_FAIL;
			snprintf(x->detail, sizeof(x->detail), "unknown system event %u",
			         run->system_event.type);
			return;
		}
	case KVM_EXIT_FAIL_ENTRY:
		x->kind = VCPU_EXIT_FAIL;
		snprintf(x->detail, sizeof(x->detail), "VM entry failed (hardware reason 0x%llx)",
		         (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
		return;
	case KVM_EXIT_INTERNAL_ERROR:
		x->kind = VCPU_EXIT_INTERNAL;
		snprintf(x->detail, sizeof(x->detail), "%s (KVM internal error)",
		         kvm_suberror_name(run->internal.suberror));
		return;
	default:
		x->kind = VCPU_EXIT_FAIL;
		snprintf(x->detail, sizeof(x->detail), "unhandled KVM exit %u", run->exit_reason);
		return;
	}
}
