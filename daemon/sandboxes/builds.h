/* Template builds through the API (builds.c): one job per (tenant, name),
 * run in a thread of its own by cove_template_ensure, at most
 * max_template_builds at once (the others wait, status "waiting"), each
 * within template_build_timeout_s.  A tenant's template lives in the
 * store as "t.<24 hex of SHA-256(tenant, name)>", which no templateID can
 * name (a dot), so only its tenant reaches it, by its name.  A build's
 * record (<state_dir>/builds/<store name>.json) survives restarts, its log
 * does not; a build that was running when coved stopped is an error
 * after ("coved restarted during the build").  Another tenant's build
 * answers as a missing one. */
#ifndef COVED_SANDBOXES_BUILDS_H
#define COVED_SANDBOXES_BUILDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/sandboxes/build_req.h"

struct coved;
struct coved_tenant;

#define COVED_BUILD_LOG_MAX     (4u << 20)
#define COVED_BUILD_LOG_KEPT    (256u << 10) /* of a finished build's log */
#define COVED_BUILDS_PER_TENANT 256          /* templates (builds) one tenant may have */

/* coved_builds_init() - reads the build records; those that were running
 * become errors.  Call once before serving.  Return: 0 or -errno. */
int coved_builds_init(struct coved *d, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* coved_build_request() - E2B's first call (POST /v3/templates): a build
 * of req->name, not started yet (req's name, cpus and memory are kept;
 * req is emptied).  Replaces a finished build of that name.
 * Return: 0 with id, or an HTTP status (409: one is running) with msg. */
int coved_build_request(struct coved *d, const struct coved_tenant *t, struct coved_build_req *req,
                        char id[COVED_BUILD_ID_LEN + 1], char *msg, size_t len);

/* coved_build_start() - starts a build: E2B's (id from coved_build_request;
 * req's steps and sources join its name, CPUs and memory) or, with id
 * NULL, a native one of req->name (a new record).  req is emptied.  COPY
 * steps' archives must be uploaded already (400 otherwise).
 * Return: 0 with *out ({name, build_id, status}), or an HTTP status. */
int coved_build_start(struct coved *d, const struct coved_tenant *t, const char *id,
                      struct coved_build_req *req, json_t **out, char *msg, size_t len);

/* coved_build_delete() - removes the tenant's template name and its build
 * record.  Return: 0, 404, or 409 while it is being built. */
int coved_build_delete(struct coved *d, const struct coved_tenant *t, const char *name, char *msg,
                       size_t len);

/* coved_build_ready() - whether the tenant has a built template name:
 * its store name into store. */
bool coved_build_ready(struct coved *d, const struct coved_tenant *t, const char *name,
                       char store[COVED_BUILD_STORE_LEN + 1]);

/* coved_build_pending() - whether the tenant's build name/id (id NULL:
 * any) exists and has not started: E2B's uploads go to it. */
bool coved_build_pending(struct coved *d, const struct coved_tenant *t, const char *name,
                         const char *id);

/* coved_builds_expire() - ends the builds past their time limit (the
 * reaper calls it every tick).  cove_template_ensure takes no deadline of
 * its own (each of its steps has lib/template's), so such a build is ended
 * here at once (status error) and what its thread still builds is removed
 * when it returns; its slot is held until then. */
void coved_builds_expire(struct coved *d);

/* coved_builds_quiet() - waits up to wait_ms for build threads to end:
 * whether none runs (coved's state may be freed then). */
bool coved_builds_quiet(struct coved *d, unsigned int wait_ms);

#endif
