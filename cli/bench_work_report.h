/* cove bench --work's table (bench_work_report.c). */
#ifndef COVE_CLI_BENCH_WORK_REPORT_H
#define COVE_CLI_BENCH_WORK_REPORT_H

#include <jansson.h>

/* work_report() - prints the table of --work: one row per count, min, p50,
 * p90, p99 and max over samples[i]["work"] (work_json()'s keys). */
void work_report(const json_t *samples);

#endif
