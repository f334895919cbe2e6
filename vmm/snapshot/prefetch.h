/* Working-set prefetch (common/wsrec.h has the record's format).
 *
 * A restore calls prefetch_restore() once its memory is mapped: with a
 * record beside the memory file it populates the recorded ranges before
 * the first KVM_RUN (MADV_POPULATE_READ, or _WRITE for pages the guest
 * wrote; MADV_WILLNEED where the kernel has neither), and the rest faults
 * lazily.  Either way it opens /proc/self/pagemap while it still can (the
 * jail has no /proc), so that prefetch_record() can later write the pages
 * this process has mapped since the restore, i.e. those the guest touched,
 * as a record into a file libcove passes in ({"op":"working_set"}).
 * mincore() cannot tell this on a MAP_PRIVATE file mapping: it reports the
 * file's page cache, and the snapshot has just been written. */
#ifndef COVE_PREFETCH_H
#define COVE_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "base/guest_mem.h"

struct prefetch_stats {
	uint32_t ranges;      /* ranges in the record applied (0: none) */
	uint64_t pages;       /* pages populated */
	uint64_t written;     /* of them populated writable */
	uint64_t us;          /* time spent populating */
	int error;            /* -errno when the record was refused or failed */
	uint64_t prefaulted;  /* pages mapped into KVM's page tables ahead */
	uint64_t prefault_us; /* time spent on it */
	int prefault_error;   /* -errno: -EOPNOTSUPP before Linux 6.10 */
};

/* Applies the record read from ws_fd (-1: none; closed here) to m. */
void prefetch_restore(const struct guest_mem *m, int ws_fd);

/* Maps the recorded ranges into KVM's nested page tables before the
 * first KVM_RUN (KVM_PRE_FAULT_MEMORY, Linux 6.10), so the guest takes
 * no exit on its first touch of each page: a written range, populated
 * writable above, is mapped writable; a read one read-only.  Call once the
 * memory slots are set, with any vCPU (the tables are the VM's); frees
 * the record.  A kernel without it, or a failure, costs only this step. */
void prefetch_prefault(const struct guest_mem *m, int vm_fd, int vcpu_fd);

/* What prefetch_restore() and prefetch_prefault() did. */
void prefetch_get_stats(struct prefetch_stats *st);

/* Writes the record of the pages touched since the restore into out_fd
 * (truncated first).  0 with *ranges and *pages, or -errno and err. */
int prefetch_record(const struct guest_mem *m, int out_fd, uint32_t *ranges, uint64_t *pages,
                    char *err, size_t errlen);

#endif
