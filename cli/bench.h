/* cove bench's private pieces: the phases of a sample and the table and
 * JSON helpers of cli/bench.c, shared with the QEMU comparison
 * (cli/bench_qemu.c, --vs qemu) and the SVG plot (cli/bench_plot.c,
 * --plot).  Times are milliseconds; NAN marks a phase not seen. */
#ifndef COVE_BENCH_H
#define COVE_BENCH_H

#include <jansson.h>
#include <stddef.h>

#include "cove.h"

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

/* ---- bench.c ------------------------------------------------------------ */

/* qsort's comparison of two doubles, ascending. */
int bench_cmp(const void *a, const void *b);

/* A table's title line ("WHAT, N samples (ms)") and column names. */
void bench_header(const char *what, int n);

/* One table row: min p50 p90 p99 max over the non-NaN values of v[0..n). */
void bench_row(const char *name, const double *v, int n);

/* The phases that were seen, as a JSON object of milliseconds. */
json_t *bench_phases_json(const double *ph);

/* ---- bench_qemu.c ------------------------------------------------------- */

/* One QEMU microvm boot of cfg's kernel, image (through a fresh qcow2
 * overlay, as Cove uses), memory and CPUs, running `true`; fills the
 * phases QEMU lets us see from outside (guest_init, first_exec, teardown;
 * the others NAN).  0, or -1 with a message in err. */
int bench_qemu_sample(const struct cove_config *cfg, double *ph, json_t **work, char *err,
                      size_t errlen);

/* Appends QEMU's sample qph, with its ratio to Cove's ph per phase, to
 * the JSON array samples. */
void bench_qemu_add_sample(json_t *samples, const double *ph, const double *qph, json_t *work);

/* Prints QEMU's table and the table of Cove/QEMU ratios per pair. */
void bench_qemu_report(double (*ph)[PH_COUNT], double (*qph)[PH_COUNT], int n);

/* ---- bench_plot.c ------------------------------------------------------- */

/* Writes path: one SVG panel per phase with the empirical CDF of Cove's
 * samples ph and, when qph is not NULL, QEMU's.  0 or -errno. */
int bench_plot_svg(const char *path, const char *title, double (*ph)[PH_COUNT],
                   double (*qph)[PH_COUNT], int n);

#endif
