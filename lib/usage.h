/* What a running sandbox uses, read on the host (usage.c; part of cove.h's
 * API): never asks the guest, so sampling many sandboxes costs each guest
 * nothing and a guest cannot misreport it. */
#ifndef COVE_LIB_USAGE_H
#define COVE_LIB_USAGE_H

#include <stdint.h>

#include "lib/base/cove_types.h"

struct cove_usage {
	uint64_t cpu_usec;   /* CPU time used since the start: its cgroup's (vCPUs, the
	                       VMM's threads), else its cove-vmm process's */
	uint64_t mem_bytes;  /* cove-vmm's resident set: the guest RAM it has touched
	                       (a guest does not give it back) and the VMM itself,
	                       whoever the kernel charges for the pages (a restored
	                       guest's are its snapshot file's page cache) */
	uint64_t mem_cache;  /* page cache charged to its cgroup (memory.stat file:
	                       its disk and snapshot files); 0 without a cgroup */
	uint64_t disk_used;  /* bytes its root disk's overlay holds on the host */
	uint64_t disk_total; /* its root disk's size */
	uint64_t net_rx;     /* bytes the sandbox sent out (its host link's rx_bytes);
	                        0 without a network */
	uint64_t net_tx;     /* bytes sent to it (the host link's tx_bytes) */
};

/* Fills *u for sb (running): 0, or -errno with err when its VMM is gone.
 * A part that cannot be read (no cgroup, an overlay elsewhere) falls back
 * as above or reads 0. */
int cove_usage(struct cove_sandbox *sb, struct cove_usage *u, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The CPU time (utime + stime) and resident set of process pid from its
 * /proc/PID/stat and status texts.  Pure: 0, or -EINVAL for texts that
 * do not parse. */
int cove_proc_usage_parse(const char *stat, const char *status, long ticks_per_s,
                          uint64_t *cpu_usec, uint64_t *rss_bytes)
    __attribute__((warn_unused_result));

#endif
