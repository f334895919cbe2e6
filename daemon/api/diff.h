/* GET /sandboxes/{id}/diff (diff.c): what the sandbox added, changed and
 * deleted in its root file system against its template (docs/diff.md).
 * ?format=json (the default) answers {"changes", "stats"}; ?format=text
 * docker diff's lines; ?tar=1 the added and changed files as a tar. */
#ifndef COVED_API_DIFF_H
#define COVED_API_DIFF_H

#include <microhttpd.h>

struct coved_sb;

/* Answers the request on c for sb (the caller's tenant's: routes.c found
 * it). */
enum MHD_Result coved_diff_reply(struct coved_sb *sb, struct MHD_Connection *c);

#endif
