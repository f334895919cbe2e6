/* cove bench --plot: the CDF plot (bench_plot.c). */
#ifndef COVE_CLI_BENCH_PLOT_H
#define COVE_CLI_BENCH_PLOT_H

#include "cli/bench_report.h"

/* Writes path: one SVG panel per phase with the empirical CDF of Cove's
 * samples ph and, when qph is not NULL, QEMU's.  0 or -errno. */
int bench_plot_svg(const char *path, const char *title, double (*ph)[PH_COUNT],
                   double (*qph)[PH_COUNT], int n);

#endif
