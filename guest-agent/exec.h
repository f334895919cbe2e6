/* EXEC (exec.c): one process per request, served on the connection until
 * it ends; and the start of a process with its stdio, which detached
 * processes (proc.c) share. */
#ifndef COVE_AGENT_EXEC_H
#define COVE_AGENT_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "conn.h"
#include "request.h"

/* Output still unread when an exec's process has exited (a background child
 * holds the pipes) is forwarded for this long, then EXIT is sent. */
#define AGENT_DRAIN_GRACE_MS 200

/* Request handler: 0 when the request was answered (OK or ERROR) and the
 * connection goes on, negative errno when it must close. */
int agent_exec(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));

/* Shared by EXEC and detached processes: the environment from layers,
 * lowest first (NULL-terminated arrays of "K=V", or NULL; a later layer's
 * variable replaces an earlier one of the same name, a bare "KEY" removes
 * it), with TERM for a pty unless set (malloc'ed array, borrowed strings);
 * a pty master and slave of x's size (O_CLOEXEC, the master non-blocking);
 * a variable. */
char **agent_exec_env(char **const *layers, size_t n, bool pty);
int agent_open_pty(const struct agent_exec_req *x, int *master, int *slave)
    __attribute__((warn_unused_result));
const char *agent_env_get(char *const *env, const char *key);

/* Starts x's process (agent_spawn) with its stdio: a pty (*master, and
 * *in and out[0] are the master too) or pipes (out[0], out[1] the stdout
 * and stderr read ends, non-blocking when out_nonblock; *in stdin's write
 * end, non-blocking, when x->stdin_open, else the child reads /dev/null).
 * The environment is agent_exec_env's.  0 with *pid and *pidfd, or -errno
 * with a message in err; the fds made so far stay the caller's to close.
 * The user, cwd and environment: x's own over the exec defaults
 * (defaults.h); a user is resolved from the guest's /etc/passwd and
 * /etc/group (users.h), and its HOME is set under every env layer but the
 * agent's own. */
int agent_exec_spawn(const struct agent_exec_req *x, bool out_nonblock, int *master, int *in,
                     int out[2], pid_t *pid, int *pidfd, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
