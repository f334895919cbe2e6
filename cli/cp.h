/* cove cp (cp.c). Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_CP_H
#define COVE_CLI_CP_H

int cli_cp(int argc, char **argv);

#endif
