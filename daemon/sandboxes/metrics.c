/* coved's /metrics: Prometheus text format, a small label set. */
#include "daemon/sandboxes/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cove.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/warm.h"
#include "daemon/trace/tracer.h"

static const double buckets[] = { 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))
_Static_assert(NBUCKETS + 1 == sizeof(((struct coved_hist *)0)->counts) / sizeof(uint64_t),
               "one count per bucket and +Inf");

void coved_hist_add(struct coved *d, struct coved_hist *h, double seconds)
{
	pthread_mutex_lock(&d->m.mu);
	size_t i = 0;
	while (i < NBUCKETS && seconds > buckets[i])
		i++;
	h->counts[i]++;
	h->n++;
	h->sum += seconds;
	pthread_mutex_unlock(&d->m.mu);
}

void coved_metric_bump(struct coved *d, uint64_t *counter)
{
	pthread_mutex_lock(&d->m.mu);
	(*counter)++;
	pthread_mutex_unlock(&d->m.mu);
}

void coved_metric_exec(struct coved *d, double seconds, uint64_t out_bytes, uint64_t in_bytes)
{
	coved_hist_add(d, &d->m.exec, seconds);
	pthread_mutex_lock(&d->m.mu);
	d->m.execs++;
	d->m.exec_out += out_bytes;
	d->m.exec_in += in_bytes;
	pthread_mutex_unlock(&d->m.mu);
}

static void hist(FILE *f, const char *name, const char *help, const struct coved_hist *h)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	uint64_t cum = 0;
	for (size_t i = 0; i < NBUCKETS; i++) {
		cum += h->counts[i];
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, buckets[i],
		        (unsigned long long)cum);
	}
	cum += h->counts[NBUCKETS];
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
	fprintf(f, "%s_sum %.6f\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->n);
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
	        (unsigned long long)v);
}

char *coved_metrics_text(struct coved *d, size_t *len)
{
	size_t by_state[4] = { 0 };
	size_t n;
	struct coved_sb **all = coved_sb_all(d, &n);
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&all[i]->mu);
		by_state[all[i]->state]++;
		pthread_mutex_unlock(&all[i]->mu);
		coved_sb_unref(all[i]);
	}
	free(all);
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	fputs("# HELP coved_sandboxes Sandboxes the daemon owns, by state.\n"
	      "# TYPE coved_sandboxes gauge\n",
	      f);
	for (int s = 0; s < 4; s++)
		fprintf(f, "coved_sandboxes{state=\"%s\"} %zu\n", coved_state_name(s), by_state[s]);
	pthread_mutex_lock(&d->m.mu);
	struct coved_metrics m = d->m;
	pthread_mutex_unlock(&d->m.mu);
	hist(f, "coved_create_seconds", "Time to create a sandbox (boot until its agent answers).",
	     &m.create);
	hist(f, "coved_restore_seconds", "Time to resume or fork a sandbox from a snapshot.",
	     &m.restore);
	hist(f, "coved_exec_seconds", "Duration of finished commands.", &m.exec);
	counter(f, "coved_execs_total", "Commands finished.", m.execs);
	counter(f, "coved_exec_output_bytes_total", "Bytes of stdout and stderr from commands.",
	        m.exec_out);
	counter(f, "coved_exec_input_bytes_total", "Bytes of stdin to commands.", m.exec_in);
	counter(f, "coved_vmm_exits_total",
	        "Sandboxes whose cove-vmm exited without the daemon asking.", m.vmm_exits);
	fputs("# HELP coved_limit_hits_total Requests refused with 429, by limit.\n"
	      "# TYPE coved_limit_hits_total counter\n",
	      f);
	if (d->net_pool) {
		struct cove_net_pool_stats ps;
		cove_net_pool_stats(d->net_pool, &ps);
		fprintf(f,
		        "# HELP coved_net_pool_ready Networks set up ahead of time, ready\n"
		        "# TYPE coved_net_pool_ready gauge\ncoved_net_pool_ready %u\n",
		        ps.ready);
		counter(f, "coved_net_pool_hits_total", "Sandbox networks taken from the pool",
		        ps.hits);
		counter(f, "coved_net_pool_misses_total",
		        "Sandbox networks set up at create time: the pool was empty", ps.misses);
		counter(f, "coved_net_pool_failures_total",
		        "Pool networks that could not be set up", ps.failures);
	}
	fprintf(f, "coved_limit_hits_total{limit=\"requests\"} %llu\n",
	        (unsigned long long)m.limit_requests);
	fprintf(f, "coved_limit_hits_total{limit=\"sandboxes\"} %llu\n",
	        (unsigned long long)m.limit_sandboxes);
	fprintf(f, "coved_limit_hits_total{limit=\"creates\"} %llu\n",
	        (unsigned long long)m.limit_creates);
	fprintf(f, "coved_limit_hits_total{limit=\"tenant\"} %llu\n",
	        (unsigned long long)m.limit_tenant);
	counter(f, "coved_requests_total", "HTTP requests answered.", m.requests);
	if (d->tracer) {
		char tm[1200];
		tracer_metrics(d->tracer, tm, sizeof(tm));
		fputs(tm, f);
	}
	counter(f, "coved_port_requests_total", "Requests to sandboxes' ports.", m.port_requests);
	counter(f, "coved_port_errors_total",
	        "Requests to sandboxes' ports that coved answered with an error.", m.port_errors);
	coved_pool_metrics(d, f);
	coved_warm_metrics(d, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
