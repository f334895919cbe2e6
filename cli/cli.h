/* cove subcommands.  Each returns the process exit status. */
#ifndef COVE_CLI_H
#define COVE_CLI_H

int cli_run(int argc, char **argv);

#endif
