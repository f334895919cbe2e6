#include "core/vm_state.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86_64/state.h"

void vcpu_kick(struct vcpu *v)
{
	__atomic_store_n(&v->run->immediate_exit, 1, __ATOMIC_SEQ_CST);
	if (v->thread_started)
		pthread_kill(v->thread, VCPU_KICK_SIGNAL);
}

static void kick_all(struct vm *vm)
{
	for (unsigned int i = 0; i < vm->ncpus; i++)
		if (vm->vcpus[i].run)
			vcpu_kick(&vm->vcpus[i]);
}

int vm_pause(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	if (vm->state == VM_STOPPED || vm->stop_requested) {
		pthread_mutex_unlock(&vm->lock);
		return -EINVAL;
	}
	vm->pause_requested = true;
	pthread_mutex_unlock(&vm->lock);
	kick_all(vm);
	pthread_mutex_lock(&vm->lock);
	while (vm->parked < vm->ncpus && !vm->stop_requested)
		pthread_cond_wait(&vm->cond, &vm->lock);
	int r = vm->stop_requested ? -EINVAL : 0;
	if (!r)
		vm->state = VM_PAUSED;
	pthread_mutex_unlock(&vm->lock);
	return r;
}

int vm_resume(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	int r = 0;
	if (vm->state == VM_STOPPED || vm->stop_requested) {
		r = -EINVAL;
	} else {
		/* kvm-clock ran on while paused: tell each vCPU's guest so its
		 * soft-lockup and RCU stall detectors take the jump for a pause,
		 * not a hang (and print nothing; with NO_HZ the expired timers
		 * fire once, no storm). */
		if (vm->state == VM_PAUSED)
			for (unsigned int i = 0; i < vm->ncpus; i++)
				x86_vcpu_clock_paused(vm->vcpus[i].fd);
		vm->pause_requested = false;
		vm->state = VM_RUNNING;
		pthread_cond_broadcast(&vm->cond);
	}
	pthread_mutex_unlock(&vm->lock);
	return r;
}

void vm_request_stop(struct vm *vm, enum vm_exit_reason reason, const char *detail)
{
	pthread_mutex_lock(&vm->lock);
	if (!vm->stop_requested) {
		vm->stop_requested = true;
		vm->exit_reason = reason;
		snprintf(vm->exit_detail, sizeof(vm->exit_detail), "%s", detail ? detail : "");
	}
	pthread_cond_broadcast(&vm->cond);
	pthread_mutex_unlock(&vm->lock);
	kick_all(vm);
}

void vm_guest_reset(struct vm *vm, const char *detail)
{
	pthread_mutex_lock(&vm->lock);
	bool panicked = vm->guest_panicked;
	char msg[sizeof(vm->panic_msg)];
	memcpy(msg, vm->panic_msg, sizeof(msg));
	pthread_mutex_unlock(&vm->lock);
	if (panicked)
		vm_request_stop(vm, VM_EXIT_PANIC, msg);
	else
		vm_request_stop(vm, VM_EXIT_RESET, detail);
}
