/* The vCPU loop: one thread per vCPU calls KVM_RUN; vcpu_decide()
 * (vcpu_exit.c) decides what an exit means and vcpu_handle_exit() acts on
 * it.  Pausing and stopping kick a vCPU out of KVM_RUN with immediate_exit
 * plus a signal. */
#include "core/vcpu.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "base/seccomp.h"
#include "core/vcpu_exit.h"
#include "core/vm_state.h"
#include "kvm_backend.h"

/* The vCPU, I/O and API filters let tgkill send only this signal. */
_Static_assert(VCPU_KICK_SIGNAL == SIGUSR1, "base/seccomp.c allows tgkill with SIGUSR1 only");

/* Whether /dev/kvm is PVM: read from /sys and /proc before any vCPU thread
 * starts, as the vCPU filter allows no path lookups.  A host fact, the same
 * for every VM of the process. */
static enum kvm_backend host_backend = KVM_BACKEND_UNKNOWN;

enum vcpu_action vcpu_handle_exit(struct vm *vm, struct kvm_run *run, size_t run_size,
                                  struct exit_hist *hist)
{
	struct vcpu_exit x;
	vcpu_decide(run, run_size, &x);
	if (hist && (x.kind == VCPU_EXIT_PIO || x.kind == VCPU_EXIT_MMIO))
		exit_hist_note(hist, x.kind == VCPU_EXIT_PIO ? EXIT_HIST_PIO : EXIT_HIST_MMIO,
		               x.addr, x.is_write);
	switch (x.kind) {
	case VCPU_EXIT_RESUME:
		return VCPU_CONTINUE;
	case VCPU_EXIT_PIO:
		/* String I/O (rep outsb/insb) arrives as count items of size bytes. */
		for (uint32_t i = 0; i < x.count; i++)
			(void)bus_access(&vm->pio, x.addr, x.data + (size_t)i * x.size, x.size,
			                 x.is_write);
		return VCPU_CONTINUE;
	case VCPU_EXIT_MMIO:
		(void)bus_access(&vm->mmio, x.addr, x.data, x.size, x.is_write);
		return VCPU_CONTINUE;
	case VCPU_EXIT_RESET:
		vm_guest_reset(vm, x.detail);
		return VCPU_STOP;
	case VCPU_EXIT_PANIC:
		vm_request_stop(vm, VM_EXIT_PANIC, x.detail);
		return VCPU_STOP;
	case VCPU_EXIT_TRIPLE_FAULT:
		vm_request_stop(vm, VM_EXIT_TRIPLE_FAULT, x.detail);
		return VCPU_STOP;
	case VCPU_EXIT_INTERNAL:
	case VCPU_EXIT_FAIL:
		break;
	}
	vm_request_stop(vm, VM_EXIT_INTERNAL, x.detail);
	return VCPU_STOP;
}

/* The instruction bytes at the vCPU's rip: from KVM's own report when the
 * emulator fetched them, else read through the guest's page tables.
 * Returns how many bytes were found (0: none). */
static size_t fault_bytes(struct vcpu *v, uint64_t rip, uint8_t *out, size_t max)
{
	struct kvm_run *run = v->run;
	if (run->emulation_failure.suberror == KVM_INTERNAL_ERROR_EMULATION &&
	    (run->emulation_failure.flags & KVM_INTERNAL_ERROR_EMULATION_FLAG_INSTRUCTION_BYTES) &&
	    run->emulation_failure.ndata >= 3) {
		size_t n = run->emulation_failure.insn_size;
		if (n > sizeof(run->emulation_failure.insn_bytes))
			n = sizeof(run->emulation_failure.insn_bytes);
		if (n > max)
			n = max;
		memcpy(out, run->emulation_failure.insn_bytes, n);
		return n;
	}
	struct kvm_translation t = { .linear_address = rip };
	if (ioctl(v->fd, KVM_TRANSLATE, &t) < 0 || !t.valid)
		return 0;
	/* Stop at the page end: the next page may not be mapped. */
	size_t n = 4096 - (t.physical_address & 4095);
	if (n > max)
		n = max;
	return gmem_read(&v->vm->mem, t.physical_address, out, n) == 0 ? n : 0;
}

/* KVM_EXIT_INTERNAL_ERROR, told in one line: the suberror's name, the
 * guest rip and the instruction bytes there, and on a PVM host the way
 * out (PVM runs only PVM guest kernels). */
static void report_internal_error(struct vcpu *v)
{
	struct kvm_regs regs;
	bool have_rip = ioctl(v->fd, KVM_GET_REGS, &regs) == 0;
	char detail[VM_EXIT_DETAIL_LEN];
	struct vcpu_exit x;
	vcpu_decide(v->run, v->vm->run_size, &x);
	int n = snprintf(detail, sizeof(detail), "%s on vCPU %u", x.detail, v->index);
	if (have_rip) {
		n += snprintf(detail + n, sizeof(detail) - (size_t)n, " at rip 0x%llx",
		              (unsigned long long)regs.rip);
		uint8_t insn[15];
		size_t len = fault_bytes(v, regs.rip, insn, sizeof(insn));
		for (size_t i = 0; i < len && (size_t)n < sizeof(detail); i++)
			n += snprintf(detail + n, sizeof(detail) - (size_t)n, "%s%02x",
			              i ? " " : " (bytes ", insn[i]);
		if (len && (size_t)n < sizeof(detail))
			n += snprintf(detail + n, sizeof(detail) - (size_t)n, ")");
	}
	if (host_backend == KVM_BACKEND_PVM && (size_t)n < sizeof(detail))
		snprintf(detail + n, sizeof(detail) - (size_t)n,
		         "; /dev/kvm is PVM (kvm_pvm), which runs only PVM guest kernels: give "
		         "--kernel a PVM guest kernel, or run through scripts/kvm-host");
	vm_request_stop(v->vm, VM_EXIT_INTERNAL, detail);
}

/* Parks here while a pause is requested; returns false when the vCPU must
 * end.  Called with vm->lock held. */
static bool vcpu_wait_runnable(struct vcpu *v)
{
	struct vm *vm = v->vm;
	while (vm->pause_requested && !vm->stop_requested) {
		if (!v->parked) {
			v->parked = true;
			vm->parked++;
			pthread_cond_broadcast(&vm->cond);
		}
		pthread_cond_wait(&vm->cond, &vm->lock);
	}
	if (v->parked) {
		v->parked = false;
		vm->parked--;
	}
	return !vm->stop_requested;
}

static void *vcpu_thread(void *arg)
{
	struct vcpu *v = arg;
	struct vm *vm = v->vm;

	/* Only vCPU threads take the kick signal. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	bool synced = false;
	for (;;) {
		pthread_mutex_lock(&vm->lock);
		if (vm->pause_requested && !vm->stop_requested && !synced) {
			/* An I/O or MMIO exit is complete in the vCPU's state only
			 * after the next KVM_RUN: enter once with immediate_exit
			 * so KVM finishes it and returns -EINTR, then park.  A
			 * snapshot taken while parked sees consistent state. */
			pthread_mutex_unlock(&vm->lock);
			__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
			if (ioctl(v->fd, KVM_RUN, 0) == 0) {
				/* Completing a string I/O can exit again. */
				if (vcpu_handle_exit(vm, v->run, vm->run_size, &v->hist) ==
				    VCPU_STOP)
					break;
				continue;
			}
			synced = true;
			continue;
		}
		bool go = vcpu_wait_runnable(v);
		synced = false;
		/* Clear the kick only once the request it carried is seen. */
		__atomic_store_n(&v->run->immediate_exit, 0, __ATOMIC_SEQ_CST);
		if (vm->pause_requested || vm->stop_requested)
			__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&vm->lock);
		if (!go)
			break;
		if (v->index == 0 && !__atomic_load_n(&vm->t_first_run_us, __ATOMIC_RELAXED))
			__atomic_store_n(&vm->t_first_run_us, boot_timer_now_us(),
			                 __ATOMIC_RELAXED);
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			char detail[96];
			snprintf(detail, sizeof(detail), "KVM_RUN on vCPU %u: %s", v->index,
			         strerror(errno));
			vm_request_stop(vm, VM_EXIT_INTERNAL, detail);
			break;
		}
		if (v->run->exit_reason == KVM_EXIT_INTERNAL_ERROR) {
			report_internal_error(v); /* needs the vCPU: registers, page tables */
			break;
		}
		if (vcpu_handle_exit(vm, v->run, vm->run_size, &v->hist) == VCPU_STOP)
			break;
	}
	return NULL;
}

static void kick_handler(int sig)
{
	(void)sig; /* its only job is to interrupt KVM_RUN */
}

int vcpu_install_kick_handler(void)
{
	struct sigaction sa = { .sa_handler = kick_handler };
	sigemptyset(&sa.sa_mask);
	if (sigaction(VCPU_KICK_SIGNAL, &sa, NULL) < 0)
		return -errno;
	return 0;
}

void vcpu_host_detect(void)
{
	host_backend = kvm_backend_detect("", NULL);
}

int vcpu_start(struct vcpu *v)
{
	char name[16], err[256];
	snprintf(name, sizeof(name), "vcpu%u", v->index);
	int r = vmm_seccomp_thread_start(&v->thread, name, VMM_THREAD_VCPU, v->vm->seccomp,
	                                 vcpu_thread, v, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "cove-vmm: %s\n", err);
		return r;
	}
	v->thread_started = true;
	return 0;
}
