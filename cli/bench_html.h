/* cove bench --html FILE: one self-contained HTML page of a run (no
 * script, nothing fetched): the setup, a table of each phase's
 * percentiles, and the CDF plot of bench_plot.c inline (bench_html.c). */
#ifndef COVE_CLI_BENCH_HTML_H
#define COVE_CLI_BENCH_HTML_H

#include <stdint.h>

#include "cli/bench_report.h"

/* What the page says the run was. */
struct bench_html_run {
	const char *mode;  /* boot, restore */
	const char *image; /* NULL: the default */
	unsigned int cpus;
	uint64_t memory_mib;
	int n; /* samples */
};

/* bench_html_write() - writes path: run's setup, the table of ph (and,
 * when qph is not NULL, QEMU's), the plot.  Text from the command line
 * (the image name) is escaped.  0 or -errno. */
int bench_html_write(const char *path, const struct bench_html_run *run, double (*ph)[PH_COUNT],
                     double (*qph)[PH_COUNT]) __attribute__((warn_unused_result));

#endif
