/* coved's journal: one JSON line per event, per sandbox, in
 * <state_dir>/journal/<id>.jsonl. */
#ifndef COVED_SANDBOXES_JOURNAL_H
#define COVED_SANDBOXES_JOURNAL_H

#include <jansson.h>

struct coved;
struct coved_sb;

/* coved_journal() - appends one JSON line to the sandbox's journal; steals
 * ev.  It adds "ts" (RFC 3339 UTC with ms) and "sandbox".  envd journals
 * exec start/end and file transfers with "type": "exec" / "file":
 * {cmd, args, cwd, env_names, start, duration_ms, exit_code, stdout_bytes,
 * stderr_bytes, stdout_head, stderr_head (first 4 KiB)}. */
void coved_journal(struct coved_sb *sb, json_t *ev);
/* Lifecycle event: {"type": type, ...extra}; extra may be NULL (stolen). */
void coved_journal_event(struct coved_sb *sb, const char *type, json_t *extra);
/* The journal file of sandbox id (malloc'ed), or NULL. */
char *coved_journal_path(const struct coved *d, const char *id);

#endif
