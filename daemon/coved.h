/* coved: the sandbox daemon's internal seam (issue 16).
 *
 * The control plane (daemon/coved*.c, CORE) owns the sandboxes, the journal,
 * the metrics and the HTTP server; the envd surface (daemon/envd*.c, ENVD)
 * serves exec and files through these calls.  Every function here may be
 * called from any request thread. */
#ifndef COVED_H
#define COVED_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>

struct coved;    /* the daemon */
struct coved_sb; /* one sandbox the daemon owns, refcounted */
struct cove_sandbox;

/* coved_sb_find() - looks a sandbox up by id.
 * Return: a reference (release it with coved_sb_unref) or NULL. */
struct coved_sb *coved_sb_find(struct coved *d, const char *id);
void coved_sb_unref(struct coved_sb *sb);
const char *coved_sb_id(const struct coved_sb *sb);

/* coved_sb_token_ok() - constant-time check of a sandbox's envd access
 * token (X-Access-Token).  NULL token: false. */
bool coved_sb_token_ok(const struct coved_sb *sb, const char *token);

/* coved_sb_cove() - the libcove handle while the sandbox runs; NULL while
 * paused, stopped or dead.  Valid as long as the reference on sb is held
 * (a pause or delete waits for no caller: it marks the record and the
 * handle is freed when the last reference goes). */
struct cove_sandbox *coved_sb_cove(struct coved_sb *sb);

/* coved_sb_envs() - the sandbox's envVars from create, as NULL-terminated
 * "K=V" strings, for execs.  Never NULL (an empty list). */
const char *const *coved_sb_envs(const struct coved_sb *sb);

/* coved_journal() - appends one JSON line to the sandbox's journal; steals
 * ev.  CORE adds "ts" (RFC 3339 UTC with ms) and "sandbox".  ENVD journals
 * exec start/end and file transfers with "type": "exec" / "file":
 * {cmd, args, cwd, env_names, start, duration_ms, exit_code, stdout_bytes,
 * stderr_bytes, stdout_head, stderr_head (first 4 KiB)}. */
void coved_journal(struct coved_sb *sb, json_t *ev);

/* coved_metric_exec() - counts one finished exec: its duration and bytes
 * out of (stdout+stderr) and into (stdin) the sandbox. */
void coved_metric_exec(struct coved *d, double seconds, uint64_t out_bytes, uint64_t in_bytes);

/* coved_json_error() - answers {"code": status, "message": msg} with that
 * HTTP status (control-plane style). */
enum MHD_Result coved_json_error(struct MHD_Connection *c, unsigned int status, const char *msg);

#endif
