/* cove ls (ls.c). Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_LS_H
#define COVE_CLI_LS_H

int cli_ls(int argc, char **argv);

#endif
