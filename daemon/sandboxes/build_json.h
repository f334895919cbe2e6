/* The views of template builds (build_json.c): coved's own JSON and
 * E2B's TemplateBuildInfo.  Each ends the builds over their time limit
 * first (builds.h), so a reader never sees one run on past it. */
#ifndef COVED_SANDBOXES_BUILD_JSON_H
#define COVED_SANDBOXES_BUILD_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct coved;
struct coved_tenant;

/* coved_build_json() - the tenant's build of name: its request, status,
 * reason and, with log, its lines from offset.  NULL: none. */
json_t *coved_build_json(struct coved *d, const struct coved_tenant *t, const char *name, bool log,
                         uint64_t offset);

/* coved_build_e2b_status() - E2B's TemplateBuildInfo of the tenant's build
 * name/id, with up to limit log entries from offset.  NULL: none. */
json_t *coved_build_e2b_status(struct coved *d, const struct coved_tenant *t, const char *name,
                               const char *id, uint64_t offset, size_t limit);

/* coved_builds_list() - the tenant's builds, as coved_build_json without
 * the log, in name order. */
json_t *coved_builds_list(struct coved *d, const struct coved_tenant *t);

#endif
