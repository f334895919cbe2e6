/* cove bench's tables and JSON: the phases' names, percentiles, rows. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/bench_report.h"

const char *const bench_phase_names[PH_COUNT] = {
	"vmm_start",   "vm_created", "first_kvm_run", "guest_init",
	"agent_ready", "first_exec", "teardown",
};

int bench_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_pct(const double *sorted, int n, double p)
{
	int i = (int)ceil(p / 100.0 * n) - 1;
	return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

void bench_row(const char *name, const double *v, int n)
{
	bench_row_w(16, name, v, n);
}

void bench_row_w(int width, const char *name, const double *v, int n)
{
	double *s = malloc(sizeof(double) * (size_t)(n ? n : 1));
	int m = 0;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			s[m++] = v[i];
	if (m) {
		qsort(s, (size_t)m, sizeof(double), bench_cmp);
		printf("%-*s %9.1f %9.1f %9.1f %9.1f %9.1f\n", width, name, s[0],
		       bench_pct(s, m, 50), bench_pct(s, m, 90), bench_pct(s, m, 99), s[m - 1]);
	}
	free(s);
}

void bench_header(const char *what, int n)
{
	printf("%s, %d samples (ms)\n%-16s %9s %9s %9s %9s %9s\n", what, n, "phase", "min", "p50",
	       "p90", "p99", "max");
}

json_t *bench_phases_json(const double *ph)
{
	json_t *o = json_object();
	for (int i = 0; i < PH_COUNT; i++)
		if (!isnan(ph[i]))
			json_object_set_new(o, bench_phase_names[i], json_real(ph[i]));
	return o;
}
