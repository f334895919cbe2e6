/* A sandbox's life after create.  Each returns 0, or an HTTP status with
 * msg saying why; one operation runs at a time per sandbox. */
#ifndef COVED_SANDBOXES_LIFECYCLE_H
#define COVED_SANDBOXES_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/sandboxes/request.h"

struct coved;
struct coved_sb;

/* The _why forms name the reason their event carries (events.h: "idle",
 * "timeout", "auto", ...); the plain ones say "requested" (an API call). */
int coved_sb_pause(struct coved_sb *sb, char *msg, size_t len);
int coved_sb_pause_why(struct coved_sb *sb, const char *reason, char *msg, size_t len);
/* *resumed: false when it was running already (timeout_s then only
 * extends its end). */
int coved_sb_resume(struct coved_sb *sb, uint64_t timeout_s, bool *resumed, char *msg, size_t len);
int coved_sb_resume_why(struct coved_sb *sb, uint64_t timeout_s, bool *resumed, const char *reason,
                        char *msg, size_t len);
int coved_sb_stop(struct coved_sb *sb, char *msg, size_t len);
int coved_sb_delete(struct coved_sb *sb, char *msg, size_t len);
int coved_sb_delete_why(struct coved_sb *sb, const char *reason, char *msg, size_t len);
int coved_sb_set_timeout(struct coved_sb *sb, uint64_t timeout_s, char *msg, size_t len);
/* The policy of a running sandbox, from a PUT's request (net->given set). */
int coved_sb_set_network(struct coved_sb *sb, const struct coved_net *net, char *msg, size_t len);
/* Checks expiry and liveness of every sandbox; the reaper calls it. */
void coved_sb_tick(struct coved *d);

/* coved_sb_fence() - a running or paused sandbox that the cluster's
 * directory says is no longer this node's (dead, or moved): its VMM is
 * stopped and it is marked dead with why; its snapshots stay. */
void coved_sb_fence(struct coved_sb *sb, const char *why);

/* coved_sb_forget() - a sandbox another node owns now: its VMM (if any)
 * stopped and its record dropped here, its snapshots left to the owner. */
void coved_sb_forget(struct coved_sb *sb);

/* With sb paused and auto_resume set: resumes it (reason "auto").
 * Return: 0 (running, resumed or not asked to), or an HTTP status with msg
 * (the resume's failure). */
int coved_sb_wake(struct coved_sb *sb, char *msg, size_t len);

#endif
