/* Snapshots of a running sandbox: a user snapshot (templateID snap-*)
 * and forks.  0 or an HTTP status with msg. */
#ifndef COVED_SANDBOXES_SNAPSHOT_H
#define COVED_SANDBOXES_SNAPSHOT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct coved_sb;

/* A user snapshot of sb, named label (NULL: none; checked by the caller,
 * snap_query.h), its id into snap_id. */
int coved_sb_snapshot(struct coved_sb *sb, const char *label, char *snap_id, size_t idlen,
                      char *msg, size_t len);
/* count forks of sb, the parent's tenant's: *results an array of
 * {"sandbox": ...} or {"error": {code, message}}, one per fork. */
int coved_sb_fork(struct coved_sb *sb, unsigned int count, uint64_t timeout_s, json_t **results,
                  char *msg, size_t len);

#endif
