/* Running a command in the guest (exec.c; part of cove.h's API). */
#ifndef COVE_LIB_AGENT_EXEC_H
#define COVE_LIB_AGENT_EXEC_H

#include <stddef.h>

#include "lib/base/cove_types.h"

/* Runs opts->argv in sb and waits for its end; output through the
 * callbacks, on the calling thread. */
int cove_exec(struct cove_sandbox *sb, const struct cove_exec_opts *opts,
              struct cove_exec_result *res, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
