/* cove bench's phases of a sample and its tables (bench_report.c). */
#ifndef COVE_CLI_BENCH_REPORT_H
#define COVE_CLI_BENCH_REPORT_H

#include <jansson.h>

enum phase {
	PH_VMM_START,
	PH_VM_CREATED,
	PH_FIRST_RUN,
	PH_GUEST_INIT,
	PH_AGENT_READY,
	PH_FIRST_EXEC,
	PH_TEARDOWN,
	PH_COUNT
};

/* The phases' names in tables, JSON and plots. */
extern const char *const bench_phase_names[PH_COUNT];

/* qsort's comparison of two doubles, ascending. */
int bench_cmp(const void *a, const void *b);

/* A table's title line ("WHAT, N samples (ms)") and column names. */
void bench_header(const char *what, int n);

/* The p-th percentile (0-100) of sorted[0..n). */
double bench_pct(const double *sorted, int n, double p);

/* One table row: min p50 p90 p99 max over the non-NaN values of v[0..n). */
void bench_row(const char *name, const double *v, int n);

/* bench_row() with the name's column width wide. */
void bench_row_w(int width, const char *name, const double *v, int n);

/* The phases that were seen, as a JSON object of milliseconds. */
json_t *bench_phases_json(const double *ph);

#endif
