/* Usage samples: the ring, the CPU share, the range, the JSON. */
#include "daemon/sandboxes/samples.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errf.h"

void coved_ring_push(struct coved_ring *r, const struct coved_sample *s)
{
	if (r->n < COVED_SAMPLES_MAX) {
		r->s[(r->head + r->n) % COVED_SAMPLES_MAX] = *s;
		r->n++;
		return;
	}
	r->s[r->head] = *s;
	r->head = (r->head + 1) % COVED_SAMPLES_MAX;
}

const struct coved_sample *coved_ring_at(const struct coved_ring *r, size_t i)
{
	return &r->s[(r->head + i) % COVED_SAMPLES_MAX];
}

double coved_cpu_pct(uint64_t used_usec, uint64_t wall_usec, unsigned int cpus)
{
	if (!wall_usec || !cpus)
		return 0;
	double pct = 100.0 * (double)used_usec / ((double)wall_usec * cpus);
	if (pct > 100)
		pct = 100;
	return (double)(int64_t)(pct * 100 + 0.5) / 100; /* pct >= 0 */
}

double coved_ring_cpu(struct coved_ring *r, uint64_t cpu_usec, int64_t mono_us, unsigned int cpus)
{
	double pct = 0;
	if (r->have_last && cpu_usec >= r->last_cpu_usec && mono_us > r->last_mono_us)
		pct = coved_cpu_pct(cpu_usec - r->last_cpu_usec,
		                    (uint64_t)(mono_us - r->last_mono_us), cpus);
	r->have_last = true;
	r->last_cpu_usec = cpu_usec;
	r->last_mono_us = mono_us;
	return pct;
}

/* Seconds since the epoch up to the year 9999. */
#define SECONDS_MAX 253402300799LL

static int parse_seconds(const char *v, const char *name, int64_t *out, char *err, size_t errlen)
{
	*out = 0;
	if (!v || !v[0])
		return 0;
	int64_t x = 0;
	for (const char *p = v; *p; p++) {
		if (*p < '0' || *p > '9' || x > SECONDS_MAX)
			return errf(err, errlen, -EINVAL, "'%s' must be Unix seconds", name);
		x = x * 10 + (*p - '0');
	}
	if (x > SECONDS_MAX)
		return errf(err, errlen, -EINVAL, "'%s' must be Unix seconds", name);
	*out = x;
	return 0;
}

int coved_metrics_range(const char *start, const char *end, int64_t *start_s, int64_t *end_s,
                        char *err, size_t errlen)
{
	if (parse_seconds(start, "start", start_s, err, errlen) < 0 ||
	    parse_seconds(end, "end", end_s, err, errlen) < 0)
		return -EINVAL;
	if (*start_s && *end_s && *end_s < *start_s)
		return errf(err, errlen, -EINVAL, "'end' is before 'start'");
	return 0;
}

static json_t *sample_json(const struct coved_sample *s)
{
	char ts[40];
	time_t secs = (time_t)(s->t_ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03dZ", (int)(s->t_ms % 1000));
	return json_pack("{s:s, s:I, s:i, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "timestamp", ts,
	                 "timestampUnix", (json_int_t)(s->t_ms / 1000), "cpuCount", (int)s->cpus,
	                 "cpuUsedPct", s->cpu_pct, "memUsed", (json_int_t)s->mem_used, "memTotal",
	                 (json_int_t)s->mem_total, "memCache", (json_int_t)s->mem_cache, "diskUsed",
	                 (json_int_t)s->disk_used, "diskTotal", (json_int_t)s->disk_total,
	                 "netRxBytes", (json_int_t)s->net_rx, "netTxBytes", (json_int_t)s->net_tx);
}

json_t *coved_ring_json(const struct coved_ring *r, int64_t start_s, int64_t end_s)
{
	json_t *a = json_array();
	for (size_t i = 0; a && r && i < r->n; i++) {
		const struct coved_sample *s = coved_ring_at(r, i);
		int64_t t = s->t_ms / 1000;
		if ((start_s && t < start_s) || (end_s && t > end_s))
			continue;
		json_t *o = sample_json(s);
		if (!o || json_array_append_new(a, o) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}
