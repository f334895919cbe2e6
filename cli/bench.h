/* cove bench (bench.c): boot, restore, fork and exec latency. */
#ifndef COVE_CLI_BENCH_H
#define COVE_CLI_BENCH_H

int cli_bench(int argc, char **argv);

#endif
