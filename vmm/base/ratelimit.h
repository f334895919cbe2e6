/* Token-bucket rate limiting for device I/O (virtio-blk's bytes/s and
 * ops/s), as Firecracker's drives have it.  Pure logic: the caller passes
 * the time (CLOCK_MONOTONIC nanoseconds), so tests drive a fake clock.
 *
 * A bucket holds at most `burst` tokens and gains `rate` tokens a second.
 * A request of n tokens is served when the bucket holds n, or, for a
 * request larger than the whole bucket, when the bucket is full: then the
 * bucket goes into debt (negative), which later requests wait off, so the
 * long-run rate still holds and a large request never stalls for ever.
 *
 * Not thread-safe: one device's limiter is used by its queue's thread. */
#ifndef COVE_RATELIMIT_H
#define COVE_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define RL_NS_PER_S 1000000000ULL

struct rl_bucket {
	uint64_t rate;    /* tokens per second; 0: unlimited */
	uint64_t burst;   /* the most tokens held (>= 1 when rate is set) */
	int64_t tokens;   /* may be negative after an oversized request */
	uint64_t frac;    /* refill remainder, in token-nanoseconds (< 1e9) */
	uint64_t last_ns; /* time of the last refill */
};

struct ratelimit {
	struct rl_bucket bytes, ops;
	uint64_t throttled;    /* requests that had to wait */
	uint64_t throttled_ns; /* sum of the waits announced by rl_take() */
};

/* The burst a bucket gets when none is given: a tenth of a second's worth
 * (at least 1), so a 16 MiB/s limit lets 1.6 MiB through at once. */
uint64_t rl_default_burst(uint64_t rate);

/* Sets up both buckets, full, at now_ns.  A rate of 0 leaves that bucket
 * unlimited; a burst of 0 means rl_default_burst(rate). */
void rl_init(struct ratelimit *rl, uint64_t bps, uint64_t bps_burst, uint64_t iops,
             uint64_t iops_burst, uint64_t now_ns);

/* Adds a one-time burst to each limited bucket (after rl_init): tokens
 * above its burst that are spent first and never earned back, as
 * Firecracker's one_time_burst (virtio-net's rx_bps_burst and friends).
 * A bucket without a rate ignores it. */
void rl_add_one_time_burst(struct ratelimit *rl, uint64_t bytes, uint64_t ops);

/* Whether either bucket limits anything. */
bool rl_enabled(const struct ratelimit *rl);

/* Asks for `bytes` byte tokens and `ops` op tokens at now_ns.  Returns 0
 * when both were taken, else the nanoseconds (>= 1) until both buckets
 * would serve the request; then nothing was taken and the caller asks
 * again after that long.  A bucket asked for 0 tokens is not consulted,
 * so a flush never waits on byte debt. */
uint64_t rl_take(struct ratelimit *rl, uint64_t bytes, uint64_t ops, uint64_t now_ns)
    __attribute__((warn_unused_result));

#endif
