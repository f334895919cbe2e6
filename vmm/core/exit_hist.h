/* Exits to user space by where they went: one small table per vCPU of
 * (port or guest-physical address, direction) -> count, written only by
 * its vCPU thread, read by the API thread for {"op":"stats"} ("exit_addrs"
 * in docs/vmm.md).  KVM's own counters (KVM_GET_STATS_FD) say how
 * many exits of each reason; this says which device caused the PIO and
 * MMIO ones. */
#ifndef COVE_EXIT_HIST_H
#define COVE_EXIT_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXIT_HIST_SLOTS 48

enum exit_hist_kind { EXIT_HIST_PIO = 1, EXIT_HIST_MMIO = 2 };

struct exit_hist_slot {
	uint64_t addr;
	uint32_t kind; /* 0: free; EXIT_HIST_PIO or EXIT_HIST_MMIO, | 4 when a write */
	uint64_t count;
};

struct exit_hist {
	struct exit_hist_slot slot[EXIT_HIST_SLOTS];
	uint64_t other; /* exits that found the table full */
};

/* Counts one exit (called by h's vCPU thread only). */
void exit_hist_note(struct exit_hist *h, enum exit_hist_kind kind, uint64_t addr, bool is_write);

/* Adds h's counts into out (at most max entries, *n in use): entries are
 * merged by (kind, addr).  Returns the exits that did not fit. */
uint64_t exit_hist_sum(const struct exit_hist *h, struct exit_hist_slot *out, size_t max,
                       size_t *n);

/* "pio_w:0x3f8", "mmio_r:0xd0000070": the name of one entry. */
void exit_hist_name(const struct exit_hist_slot *s, char *buf, size_t len);

#endif
