/* cove exec (exec.c). Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_EXEC_H
#define COVE_CLI_EXEC_H

int cli_exec(int argc, char **argv);

#endif
