/* A sandbox as the API shows it (E2B's SandboxDetail fields). */
#ifndef COVED_SANDBOXES_VIEW_H
#define COVED_SANDBOXES_VIEW_H

#include <jansson.h>
#include <stdbool.h>

#define COVED_ENVD_VERSION "0.5.7"

struct coved_sb;

/* A new object; with_token: with its envdAccessToken. */
json_t *coved_sb_json(struct coved_sb *sb, bool with_token);

#endif
