/* Snapshots of a running sandbox: a user snapshot (templateID snap-*)
 * and forks.  0 or an HTTP status with msg. */
#ifndef COVED_SANDBOXES_SNAPSHOT_H
#define COVED_SANDBOXES_SNAPSHOT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct coved_sb;

int coved_sb_snapshot(struct coved_sb *sb, char *snap_id, size_t idlen, char *msg, size_t len);
/* count forks of sb, the parent's tenant's: *results an array of
 * {"sandbox": ...} or {"error": {code, message}}, one per fork. */
int coved_sb_fork(struct coved_sb *sb, unsigned int count, uint64_t timeout_s, json_t **results,
                  char *msg, size_t len);

#endif
