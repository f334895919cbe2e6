/* coved's journal: one JSON line per event, per sandbox, in
 * <state_dir>/journal/<id>.jsonl, chained by hashes (lib/base/jchain.h):
 * each line's "seq" counts from 1 and its "prev" is the SHA-256 of the
 * line before.  One ordered record of the sandbox: execs and file
 * transfers (envd), lifecycle events (coved_event), egress decisions
 * (folded in from the sandbox's egress.log). */
#ifndef COVED_SANDBOXES_JOURNAL_H
#define COVED_SANDBOXES_JOURNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/base/sha256.h"

struct coved;
struct coved_sb;

/* coved_journal() - appends one JSON line to the sandbox's journal; steals
 * ev.  It puts "seq", "prev", "ts" (RFC 3339 UTC with ms) and "sandbox"
 * first; ev's own keys of those names are dropped.  Appends to one
 * sandbox's journal are serialised; egress decisions logged since the
 * last append go in first.  envd journals exec start/end and file
 * transfers with "type": "exec" / "file":
 * {cmd, args, cwd, env_names, start, duration_ms, exit_code, stdout_bytes,
 * stderr_bytes, stdout_head, stderr_head (first 4 KiB)};
 * {op: read|write, path, bytes, user, duration_ms}. */
void coved_journal(struct coved_sb *sb, json_t *ev);
/* A line of "type": "lifecycle" that is no event of coved_event's (a
 * changed timeout or network policy, an adoption): {"event": type,
 * ...extra}; extra may be NULL (stolen). */
void coved_journal_event(struct coved_sb *sb, const char *type, json_t *extra);
/* The journal file of sandbox id (malloc'ed), or NULL. */
char *coved_journal_path(const struct coved *d, const char *id);

/* coved_journal_fold() - the sandbox's egress decisions not yet in the
 * journal, appended now (readers call it before they read). */
void coved_journal_fold(struct coved_sb *sb);

/* coved_journal_tail() - the seq and hash of the last line coved wrote
 * (seq 0: none yet), recovered from the file's end on first use after
 * coved starts.  For the verifier's anchor. */
void coved_journal_tail(struct coved_sb *sb, uint64_t *seq, char hash[SHA256_HEX]);

/* coved_journal_wait() - waits until the journal's seq passes @seq or
 * @ms milliseconds pass.  Return: the seq now. */
uint64_t coved_journal_wait(struct coved_sb *sb, uint64_t seq, int ms);

#endif
