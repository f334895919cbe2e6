/* One sandbox the daemon owns, refcounted, as the rooms above the
 * sandboxes see it (the API, envd): its id, token, libcove handle and
 * envVars.  Every function here may be called from any request thread.
 * The struct itself is the sandboxes room's (sandbox_priv.h). */
#ifndef COVED_SANDBOXES_SANDBOX_H
#define COVED_SANDBOXES_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>

#define COVED_ID_LEN    20 /* sandbox ids: [a-z0-9], as E2B's look */
#define COVED_TOKEN_LEN 64 /* access tokens: 32 random bytes in hex */

struct coved_sb;
struct cove_sandbox;

enum coved_state {
	COVED_SB_RUNNING,
	COVED_SB_PAUSED,
	COVED_SB_STOPPED,
	COVED_SB_DEAD,
};
const char *coved_state_name(enum coved_state s);

struct coved_sb *coved_sb_ref(struct coved_sb *sb);
void coved_sb_unref(struct coved_sb *sb);
const char *coved_sb_id(const struct coved_sb *sb);

/* coved_sb_token_ok() - constant-time check of a sandbox's envd access
 * token (X-Access-Token).  NULL token: false. */
bool coved_sb_token_ok(const struct coved_sb *sb, const char *token);
/* coved_sb_restricted() - its create restricted public traffic: its
 * ports need its traffic token (E2B-Traffic-Access-Token). */
bool coved_sb_restricted(const struct coved_sb *sb);
/* coved_sb_traffic_ok() - constant-time check of that traffic token.
 * NULL token, or a sandbox without one: false. */
bool coved_sb_traffic_ok(const struct coved_sb *sb, const char *token);

/* coved_sb_cove() - the libcove handle while the sandbox runs; NULL while
 * paused, stopped or dead.  Valid as long as the reference on sb is held
 * (a pause or delete waits for no caller: it marks the record and the
 * handle is freed when the last reference goes). */
struct cove_sandbox *coved_sb_cove(struct coved_sb *sb);

/* coved_sb_gone() - deleted, or dead: its journal gets no more lines but
 * a deletion's. */
bool coved_sb_gone(struct coved_sb *sb);

/* coved_sb_envs() - the sandbox's envVars from create, as NULL-terminated
 * "K=V" strings, for execs.  Never NULL (an empty list). */
const char *const *coved_sb_envs(const struct coved_sb *sb);

/* The wall clock in ms since the epoch (start and end times). */
int64_t coved_now_ms(void);

#endif
