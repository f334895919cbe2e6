/* cove stats (stats.c). Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_STATS_H
#define COVE_CLI_STATS_H

int cli_stats(int argc, char **argv);

#endif
