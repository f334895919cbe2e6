/* cove bench --vs qemu: QEMU microvm boots beside Cove's (bench_qemu.c). */
#ifndef COVE_CLI_BENCH_QEMU_H
#define COVE_CLI_BENCH_QEMU_H

#include <jansson.h>
#include <stddef.h>

#include "cli/bench_report.h"
#include "cove.h"

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

#endif
