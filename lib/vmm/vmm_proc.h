/* cove-vmm as a process (vmm_proc.c): its spawn, its readiness, its log,
 * why it died, its end. */
#ifndef COVE_VMM_PROC_H
#define COVE_VMM_PROC_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/base/handle.h"

/* The most arguments a caller gives vmm_spawn (the jail's are added). */
#define COVE_VMM_ARGS_MAX 48

/* The last non-empty line of a file (cove-vmm's log, the console),
 * however long, cut to fit out; "" when there is none. */
void vmm_log_tail(const char *path, char *out, size_t len);

/* The start log's first line: what confines sb (jail_describe). */
void vmm_log_confinement(const struct cove_sandbox *sb, const char *log);

/* Appends "cove: " and the formatted line to the VMM log at log. */
void vmm_log_line(const char *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Starts cove-vmm (argv, NULL-terminated) with its output appended to log:
 * our child, killed when we die, or detached (its own session, neither
 * dying with us nor staying our zombie).  Sets sb->pid and sb->pidfd. */
int vmm_spawn(char *const argv[], bool detached, const char *log, struct cove_sandbox *sb,
              char *err, size_t errlen) __attribute__((warn_unused_result));

/* Waits up to timeout_ms for the agent's HELLO on the listening socket lfd.
 * -ECHILD when cove-vmm dies first (its log's or console's last line in
 * err), -ETIMEDOUT. */
int vmm_wait_ready(struct cove_sandbox *sb, int lfd, unsigned int timeout_ms, const char *console,
                   const char *log, char *err, size_t errlen) __attribute__((warn_unused_result));

/* The message for a cove-vmm that died early (-ECHILD): its log's last
 * line, else the console's; a seccomp kill is said as such.  when: "before
 * the agent started", "during the restore". */
int vmm_died(struct cove_sandbox *sb, const char *log, const char *console, const char *when,
             char *err, size_t errlen);

/* What a seccomp kill means, for messages. */
#define VMM_SECCOMP_KILLED                                                                     \
	"it made a system call its thread may not make (a cove-vmm bug, or an exploited VMM; " \
	"the kernel log has the call)"

/* Whether cove-vmm, our child, was killed by SIGSYS (a seccomp filter's
 * verdict); it is not reaped. */
bool vmm_killed_by_seccomp(struct cove_sandbox *sb);

/* Waits up to grace_ms for cove-vmm to exit, then sends SIGTERM (and
 * SIGCONT) and waits VMM_TERM_MS, then SIGKILL and VMM_KILL_MS (through the
 * pidfd, never to a reused pid); reaps a child and closes the pidfd.  A
 * no-op once the pidfd is closed. */
#define VMM_TERM_MS 3000
#define VMM_KILL_MS 2000
void vmm_reap(struct cove_sandbox *sb, int grace_ms);

#endif
