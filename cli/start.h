/* cove start and cove stop (start.c). Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_START_H
#define COVE_CLI_START_H

int cli_start(int argc, char **argv);
int cli_stop(int argc, char **argv);

#endif
