/* A template build's thread (build_run.c) and its time limit.
 * cove_template_ensure takes no deadline of its own (each of its steps
 * has lib/template's), so a build over template_build_timeout_s is ended
 * here at once (status error), and what its thread still builds is
 * removed when it returns; its slot is held until then. */
#ifndef COVED_SANDBOXES_BUILD_RUN_H
#define COVED_SANDBOXES_BUILD_RUN_H

#include <stdbool.h>

struct coved;
struct coved_build;

/* coved_build_spawn() - starts b's thread (b->status WAITING, its
 * deadline set; under the builds' mu).  Return: 0 or -errno. */
int coved_build_spawn(struct coved *d, struct coved_build *b);

/* coved_builds_expire() - ends the builds past their time limit: the
 * reaper calls it every tick. */
void coved_builds_expire(struct coved *d);

/* coved_builds_quiet() - waits up to wait_ms for build threads to end:
 * whether none runs (coved's state may be freed then). */
bool coved_builds_quiet(struct coved *d, unsigned int wait_ms);

#endif
