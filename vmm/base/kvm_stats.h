/* KVM's binary statistics (KVM_GET_STATS_FD): per-vCPU counters such as
 * "exits", "io_exits", "mmio_exits", "halt_exits".  Used for work counts
 * beside times (cove bench) through the control API's "stats". */
#ifndef COVE_KVM_STATS_H
#define COVE_KVM_STATS_H

#include <stddef.h>
#include <stdint.h>

#define KVM_STAT_NAME_MAX 48
#define KVM_STATS_MAX     128

struct kvm_counter {
	char name[KVM_STAT_NAME_MAX];
	uint64_t value;
};

/* The binary stats fd of a vCPU or VM fd, or -errno (-ENOTSUP without
 * KVM_GET_STATS_FD).  Open a vCPU's before it first runs: every vCPU
 * ioctl waits for the vCPU's mutex, which KVM_RUN holds while the guest
 * runs or halts; reading the stats fd later needs no lock. */
int kvm_stats_open(int fd);

/* Adds the cumulative single-value counters of the stats fd sfd into
 * c[0..*n), matching by name and appending new ones up to max.  Returns 0
 * or -errno. */
int kvm_stats_add(int sfd, struct kvm_counter *c, size_t max, size_t *n)
    __attribute__((warn_unused_result));

#endif
