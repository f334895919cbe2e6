/* A command's input and output between the terminal and the guest
 * (exec_io.c). */
#ifndef COVE_CLI_EXEC_IO_H
#define COVE_CLI_EXEC_IO_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/options.h"
#include "cove.h"
#include "lib/base/text.h"

/* Where a guest's stdout or stderr goes (exec_io.c): to a terminal
 * through the filter that keeps only SGR colour of escape sequences
 * (guest text is not trusted with a terminal).  cli_stream_init picks
 * the filter by isatty(fd); cli_stream_write drops the output when our
 * reader went away. */
struct cli_stream {
	int fd;
	bool filter;
	struct text_filter f;
};
void cli_stream_init(struct cli_stream *o, int fd);
void cli_stream_write(struct cli_stream *o, const void *data, size_t len);

/* Runs argv (NULL-terminated) in sb with our stdin, stdout and stderr
 * forwarded, a raw terminal under -t, signals forwarded to the command.
 * Returns the exit status cove run defines: the command's, 128+N for
 * signal N, 124 on --timeout, 127/126 when it cannot be found or run, 125
 * when the sandbox failed.  *ran (when not NULL) tells whether the
 * command ran at all. */
int cli_exec_command(struct cove_sandbox *sb, const struct cli_exec *x, char **argv,
                     const char *prog, bool *ran);

#endif
