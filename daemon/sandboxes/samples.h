/* A sandbox's usage samples as getMetrics answers them (samples.c): a
 * bounded ring, the CPU share between two readings, the query's time
 * range and E2B's SandboxMetric JSON.  Pure (unit-tested, the range parser
 * fuzzed); sampler.c takes the readings. */
#ifndef COVED_SANDBOXES_SAMPLES_H
#define COVED_SANDBOXES_SAMPLES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COVED_SAMPLES_MAX 900 /* kept per sandbox: 30 minutes at COVED_SAMPLE_MS */

struct coved_sample {
	int64_t t_ms;   /* wall clock, ms since the epoch */
	double cpu_pct; /* of all its vCPUs, 0-100, over the time since the last one */
	uint32_t cpus;
	uint64_t mem_used, mem_total, mem_cache, disk_used, disk_total; /* bytes */
	uint64_t net_rx, net_tx; /* bytes sent out and in since its network was made */
};

struct coved_ring {
	struct coved_sample s[COVED_SAMPLES_MAX];
	size_t head, n; /* the oldest at s[head]; n kept */
	/* The last reading, for the next sample's CPU share. */
	bool have_last;
	uint64_t last_cpu_usec;
	int64_t last_mono_us;
};

/* Adds s, dropping the oldest once COVED_SAMPLES_MAX are kept. */
void coved_ring_push(struct coved_ring *r, const struct coved_sample *s);
/* The i-th oldest sample (i < r->n). */
const struct coved_sample *coved_ring_at(const struct coved_ring *r, size_t i);

/* CPU used over a wall interval as a share of cpus CPUs, in percent, 0 to
 * 100, to 2 decimals; 0 for an empty interval or no CPUs. */
double coved_cpu_pct(uint64_t used_usec, uint64_t wall_usec, unsigned int cpus);
/* The CPU share of a new reading against the ring's last one (0 without
 * one, or when the counter went back: a new VMM after a resume), and the
 * reading kept for the next. */
double coved_ring_cpu(struct coved_ring *r, uint64_t cpu_usec, int64_t mono_us, unsigned int cpus);

/* getMetrics' ?start=&end= (Unix seconds; either may be NULL or empty: no
 * bound): 0 with *start_s, *end_s (0: none), or -EINVAL with a reason for
 * a value that is not a whole number of seconds in range or an end before
 * the start. */
int coved_metrics_range(const char *start, const char *end, int64_t *start_s, int64_t *end_s,
                        char *err, size_t errlen) __attribute__((warn_unused_result));

/* The ring's samples in [start_s, end_s] (0: open), oldest first, as an
 * array of E2B's SandboxMetric {timestamp, timestampUnix, cpuCount,
 * cpuUsedPct, memUsed, memTotal, memCache, diskUsed, diskTotal} and Cove's
 * own netRxBytes, netTxBytes (counters, for the console's charts); NULL on
 * ENOMEM. */
json_t *coved_ring_json(const struct coved_ring *r, int64_t start_s, int64_t end_s);

#endif
