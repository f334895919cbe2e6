#include "devices/boot_timer.h"

#include <stdio.h>

#include "clock.h"

static uint64_t process_start_ns;

/* Runs before main(): as close to exec as user space gets. */
__attribute__((constructor)) static void boot_timer_mark_start(void)
{
	process_start_ns = (uint64_t)mono_ns();
}

uint64_t boot_timer_now_us(void)
{
	return ((uint64_t)mono_ns() - process_start_ns) / 1000;
}

uint64_t boot_timer_start_mono_us(void)
{
	return process_start_ns / 1000;
}

static struct boot_phase phases[BOOT_PHASES_MAX];
static unsigned int nphases;

void boot_phase(const char *name)
{
	if (nphases < BOOT_PHASES_MAX)
		phases[nphases++] = (struct boot_phase){ .name = name, .us = boot_timer_now_us() };
}

const struct boot_phase *boot_phases(unsigned int *n)
{
	*n = nphases;
	return phases;
}

void boot_timer_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct boot_timer *t = opaque;
	if (!is_write || offset != 0 || len != 1 || data[0] != BOOT_TIMER_MAGIC)
		return;
	uint64_t us = boot_timer_now_us();
	if (__atomic_exchange_n(&t->fired, us, __ATOMIC_RELAXED) == 0 && t->log_fd >= 0)
		dprintf(t->log_fd, "cove-vmm: boot-timer: guest init after %llu us\n",
		        (unsigned long long)us);
}
