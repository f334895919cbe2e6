/* One sample's measurements (bench_sample.c). */
#ifndef COVE_CLI_BENCH_SAMPLE_H
#define COVE_CLI_BENCH_SAMPLE_H

#include <jansson.h>
#include <stddef.h>

#include "cove.h"

/* Runs `true` in sb: 0, or -errno with err (its exit status too). */
int bench_exec_true(struct cove_sandbox *sb, char *err, size_t errlen);

/* Fills the VMM's phases (relative to t0) in ph and returns the work
 * counts (a new JSON object). */
json_t *bench_vmm_sample(struct cove_sandbox *sb, double t0, double *ph);

#endif
