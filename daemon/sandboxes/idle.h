/* Idle pause and auto-resume (idle.c, docs/daemon.md "Idle pause"): a
 * sandbox with an idle timeout has end_ms pushed on by every envd request
 * and by commands running in it, is paused (reason "idle") once it passes
 * with nothing going on, and, with auto_resume, an envd request to it
 * paused resumes it first (reason "auto", coved_sb_wake in lifecycle.c). */
#ifndef COVED_SANDBOXES_IDLE_H
#define COVED_SANDBOXES_IDLE_H

#include <stdbool.h>
#include <stddef.h>

struct coved_sb;

/* An envd request to sb begins (busy) or ends (unbusy): while any is in
 * flight the idle timeout does not run, and each end starts it again. */
void coved_sb_busy(struct coved_sb *sb);
void coved_sb_unbusy(struct coved_sb *sb);

/* The reaper's check, sb->op held, sb running with end_ms passed: whether
 * it is idle, i.e. no envd request in flight and no command running in it
 * but the template's start command (asked of the agent).  When it is
 * busy, end_ms moves to the idle timeout from now. */
bool coved_sb_idle_due(struct coved_sb *sb);

#endif
