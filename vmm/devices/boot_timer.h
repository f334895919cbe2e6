/* Boot timer: the guest writes BOOT_TIMER_MAGIC to port BOOT_TIMER_PORT
 * when its init starts; cove-vmm logs the microseconds since its own
 * process started.  `cove bench` and the boot benchmarks read that line. */
#ifndef COVE_BOOT_TIMER_H
#define COVE_BOOT_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#include "boot_timer_abi.h" /* BOOT_TIMER_PORT, BOOT_TIMER_MAGIC */

/* Monotonic microseconds since this process started (its first
 * constructor ran). */
uint64_t boot_timer_now_us(void);

/* CLOCK_MONOTONIC microseconds at which this process started: the same
 * clock in every process, so a launcher can line up its own times. */
uint64_t boot_timer_start_mono_us(void);

/* The start's phases, for `cove bench` and the pool benchmark: each call
 * records NAME (a string literal) at boot_timer_now_us().  Called by the
 * main thread before any other thread starts; read afterwards (thread
 * creation orders the two).  At most BOOT_PHASES_MAX are kept. */
#define BOOT_PHASES_MAX 16
struct boot_phase {
	const char *name;
	uint64_t us;
};
void boot_phase(const char *name);
/* The phases recorded so far, in order; *n their count. */
const struct boot_phase *boot_phases(unsigned int *n);

struct boot_timer {
	int log_fd;     /* where the line goes (stderr) */
	uint64_t fired; /* microseconds at the first magic write, 0 before */
};

void boot_timer_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);

#endif
