/* cove bench --work's table: one row per count, min p50 p90 p99 max over
 * the samples' "work" objects (bench_work.c writes them). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_report.h"
#include "cli/bench_work_report.h"

#define ROW_W 28

static const char *const procs[] = { "cove-vmm", "cove-egress", "coved", "cove" };

/* The number at work.k[0].k[1]..., NAN where it is missing. */
static double at(const json_t *sample, const char *const *k, int nk)
{
	const json_t *v = json_object_get(sample, "work");
	for (int i = 0; i < nk && v; i++)
		v = json_object_get(v, k[i]);
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void row(const json_t *samples, const char *label, const char *k0, const char *k1,
                const char *k2, const char *k3)
{
	const char *k[] = { k0, k1, k2, k3 };
	int nk = k3 ? 4 : k2 ? 3 : k1 ? 2 : 1;
	int n = (int)json_array_size(samples);
	double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
	if (!v)
		return;
	for (int i = 0; i < n; i++)
		v[i] = at(json_array_get(samples, (size_t)i), k, nk);
	bench_row_w(ROW_W, label, v, n);
	free(v);
}

/* Up to max keys of the first sample's object work.k0.k1[.k2], largest first. */
static int top(const json_t *samples, const char *k0, const char *k1, const char *k2,
               const char **out, int max)
{
	const json_t *o = json_object_get(json_array_get(samples, 0), "work");
	o = json_object_get(json_object_get(o, k0), k1);
	if (k2)
		o = json_object_get(o, k2);
	int n = 0;
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)o, key, v)
	{
		int j = n < max ? n++ : max;
		if (j == max &&
		    json_integer_value(v) <= json_integer_value(json_object_get(o, out[max - 1])))
			continue;
		if (j == max)
			j = max - 1;
		for (; j > 0 &&
		       json_integer_value(json_object_get(o, out[j - 1])) < json_integer_value(v);
		     j--)
			out[j] = out[j - 1];
		out[j] = key;
	}
	return n;
}

void work_report(const json_t *samples)
{
	int n = (int)json_array_size(samples);
	char label[96];
	printf("work, %d samples (counts; CPU in ms)\n%-*s %9s %9s %9s %9s %9s\n", n, ROW_W,
	       "count", "min", "p50", "p90", "p99", "max");
	for (size_t p = 0; p < sizeof(procs) / sizeof(procs[0]); p++) {
		snprintf(label, sizeof(label), "syscalls %s", procs[p]);
		row(samples, label, "syscalls", procs[p], "total", NULL);
	}
	row(samples, "cove-vmm start->KVM_RUN", "vmm_syscalls_to_first_kvm_run", NULL, NULL, NULL);
	const char *names[8];
	int m = top(samples, "syscalls", "cove-vmm", "by_name", names, 8);
	for (int i = 0; i < m; i++) {
		snprintf(label, sizeof(label), "  cove-vmm %s", names[i]);
		row(samples, label, "syscalls", "cove-vmm", "by_name", names[i]);
	}
	row(samples, "KVM exits (traced)", "kvm_exits_traced", "total", NULL, NULL);
	row(samples, "  of them MMIO accesses", "kvm_exits_traced", "mmio_accesses", NULL, NULL);
	m = top(samples, "kvm_exits_traced", "by_reason", NULL, names, 6);
	for (int i = 0; i < m; i++) {
		snprintf(label, sizeof(label), "  exit %s", names[i]);
		row(samples, label, "kvm_exits_traced", "by_reason", names[i], NULL);
	}
	row(samples, "faults cove-vmm minor", "faults", "cove-vmm", "minor", NULL);
	row(samples, "faults cove-vmm major", "faults", "cove-vmm", "major", NULL);
	for (size_t p = 0; p < sizeof(procs) / sizeof(procs[0]); p++) {
		snprintf(label, sizeof(label), "bytes copied %s", procs[p]);
		row(samples, label, "bytes_copied", procs[p], "total", NULL);
	}
	for (size_t p = 0; p < sizeof(procs) / sizeof(procs[0]); p++) {
		snprintf(label, sizeof(label), "CPU ms %s", procs[p]);
		row(samples, label, "cpu_ms", procs[p], "on_cpu", NULL);
	}
	row(samples, "CPU ms guest", "cpu_ms", "guest", NULL, NULL);
}
