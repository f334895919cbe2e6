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

/* Sets the defaults of every later exec and detached process in sb
 * (replacing older ones whole; all members NULL clears them).  -EINVAL
 * for a relative cwd, a malformed user or env entry; the agent's errors
 * otherwise.  An unknown user is only noticed by the execs that use it. */
int cove_set_exec_defaults(struct cove_sandbox *sb, const struct cove_exec_defaults *d, char *err,
                           size_t errlen) __attribute__((warn_unused_result));

#endif
