/* Starting an exec'd process: its own session, its stdio, its user, its
 * directory.  Used by exec.c. */
#ifndef COVE_AGENT_SPAWN_H
#define COVE_AGENT_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct agent_spawn {
	const char *const *argv; /* argv[0] is searched in path unless it has a '/' */
	char *const *envp;
	const char *path; /* the search path (the child's PATH), NULL for the default */
	const char *cwd;  /* NULL: home, else "/" */
	const char *home; /* NULL: "/root" */
	int64_t uid, gid; /* -1: unchanged */
	/* The supplementary groups (setgroups) with uid/gid; ngroups 0: none
	 * when the ids change, else unchanged. */
	const gid_t *groups;
	size_t ngroups;
	int fds[3]; /* become the child's 0, 1, 2 (stay open in the caller) */
	bool ctty;  /* fds[0] is a pty slave: make it the controlling terminal */
};

/* Starts argv in a new session (so its pid is also its process group id)
 * and returns once it has exec'd: 0 with *pid and *pidfd (O_CLOEXEC; readable
 * when the process has ended), or -errno with the failing step in err (the
 * child is reaped then).
 *
 * The pid is tracked until agent_spawn_wait() collects its status, so
 * PID 1's orphan reaper (agent_reap_orphans) hands that status over rather
 * than losing it. */
int agent_spawn(const struct agent_spawn *s, pid_t *pid, int *pidfd, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Collects the result of a process from agent_spawn() (blocking unless
 * nohang): 0 with *code set for an exit, or *sig for a signal; 1 when nohang
 * and it is still running; -errno.  Callers that only need the process gone
 * (cleanup paths) may ignore the result. */
int agent_spawn_wait(pid_t pid, int pidfd, bool nohang, int *code, int *sig);

/* PID 1: reaps every ended child; statuses of agent_spawn() processes are
 * kept for agent_spawn_wait(), the rest (orphans) are dropped. */
void agent_reap_orphans(void);

#endif
