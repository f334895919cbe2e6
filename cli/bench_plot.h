/* cove bench --plot: the CDF plot (bench_plot.c). */
#ifndef COVE_CLI_BENCH_PLOT_H
#define COVE_CLI_BENCH_PLOT_H

#include <stdio.h>

#include "cli/bench_report.h"

/* Writes path: one SVG panel per phase with the empirical CDF of Cove's
 * samples ph and, when qph is not NULL, QEMU's.  0 or -errno. */
int bench_plot_svg(const char *path, const char *title, double (*ph)[PH_COUNT],
                   double (*qph)[PH_COUNT], int n);

/* The same SVG, written to f (the HTML report embeds it).  title is
 * written as it is: the caller's own text, no markup in it. */
void bench_plot_svg_to(FILE *f, const char *title, double (*ph)[PH_COUNT], double (*qph)[PH_COUNT],
                       int n);

#endif
