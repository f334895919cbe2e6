/* cove run (run.c). Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_RUN_H
#define COVE_CLI_RUN_H

int cli_run(int argc, char **argv);

#endif
