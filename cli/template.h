/* cove template (template.c). Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_TEMPLATE_H
#define COVE_CLI_TEMPLATE_H

#include <stdbool.h>

int cli_template(int argc, char **argv);

struct cove_template_io;
/* Template progress lines to stderr (prefixed with prog) and, with
 * steps_output, the steps' output to our stdout and stderr. */
void cli_template_io(struct cove_template_io *io, const char *prog, bool steps_output);

#endif
