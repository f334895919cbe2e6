/* cove diff (diff.c): what a sandbox changed in its root file system. */
#ifndef COVE_CLI_DIFF_H
#define COVE_CLI_DIFF_H

/* Returns the exit status: 0, 1 when the diff failed, 2 for bad usage. */
int cli_diff(int argc, char **argv);

#endif
