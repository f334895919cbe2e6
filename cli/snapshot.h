/* cove snapshot, restore and fork (snapshot.c). Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_SNAPSHOT_H
#define COVE_CLI_SNAPSHOT_H

int cli_snapshot(int argc, char **argv);
int cli_restore(int argc, char **argv);
int cli_fork(int argc, char **argv);

#endif
