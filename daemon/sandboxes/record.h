/* coved's sandbox records: <state_dir>/sandboxes/<id>.json (0600,
 * replaced atomically), read back and re-adopted at start. */
#ifndef COVED_SANDBOXES_RECORD_H
#define COVED_SANDBOXES_RECORD_H

struct coved;
struct coved_sb;

int coved_record_write(struct coved_sb *sb);
void coved_record_remove(struct coved_sb *sb);
/* coved_record_shared_remove() - the copy of sb's record in the cluster's
 * shared snapshot dir goes (sb is deleted). */
void coved_record_shared_remove(struct coved_sb *sb);
/* coved_record_take() - a paused sandbox of tenant, adopted from the
 * record another node left in the shared snapshot dir (path): listed and
 * recorded here.  Return: the sandbox (a reference), or NULL. */
struct coved_sb *coved_record_take(struct coved *d, const char *path, const char *tenant);
/* coved_sb_dir_note() - what the cluster's directory keeps of sb. */
struct coved_dir_note;
void coved_sb_dir_note(struct coved_sb *sb, struct coved_dir_note *n);
/* dir/name holds text, whole or not at all (0600): 0 or -errno. */
int coved_write_atomic(const char *dir, const char *name, const char *text);
/* Reads every record and adopts its sandbox: the count, or -errno. */
int coved_adopt_all(struct coved *d);
/* Records sb as dead (why), counts a VMM exit, journals it. */
void coved_mark_dead(struct coved_sb *sb, const char *why);

#endif
