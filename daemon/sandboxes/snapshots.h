/* coved's user snapshots as objects of their own: their meta files
 * (<state_dir>/snapshots/snap-*.json), names, the tenant's listing, the
 * lookup a create from an id or a name makes, and deleting one that nothing
 * stands on.  Each snapshot belongs to the tenant whose sandbox made it;
 * another tenant's answers as a missing one. */
#ifndef COVED_SANDBOXES_SNAPSHOTS_H
#define COVED_SANDBOXES_SNAPSHOTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct coved;
struct coved_sb;
struct coved_tenant;
struct coved_snap_query;

/* coved_snap_record() - writes the meta file of user snapshot @id that @sb
 * just made (its chain: sb's snapshot dirs but the last, the snapshot
 * itself), named @name (NULL: none).  A name is an alias: when another of
 * the tenant's snapshots holds it, it moves here.  Return: 0 or -errno. */
int coved_snap_record(struct coved_sb *sb, const char *id, const char *name);

/* coved_snap_find() - templateID @tid as one of @t's snapshots, by id or
 * by name, its directory into @path.  Return: 1 found, with the snapshot
 * held (a delete waits) until coved_snap_unhold(); 0 when it is none of
 * the tenant's; -1 when they cannot be read now (busy). */
int coved_snap_find(struct coved *d, const struct coved_tenant *t, const char *tid, char *path,
                    size_t len);
void coved_snap_unhold(void);

/* Frees the index of snapshot names (coved's exit; it is read again when
 * needed). */
void coved_snap_index_free(void);
/* coved_snap_here() - whether @tid is one of @t's snapshots on this node. */
bool coved_snap_here(struct coved *d, const struct coved_tenant *t, const char *tid);

/* coved_snap_list() - @t's snapshots that @q asks for, newest first:
 * [{snapshotID, names, sandboxID, templateID, createdAt}], at most
 * q->limit; @next gets the nextToken when more follow, else "".
 * Return: the array, or NULL (out of memory). */
json_t *coved_snap_list(struct coved *d, const struct coved_tenant *t,
                        const struct coved_snap_query *q, char *next, size_t nlen);

/* coved_snap_delete() - deletes @t's snapshot @id_or_name.  Return: 0, 404
 * when there is none, 409 while a sandbox or another snapshot stands on
 * it, with @msg. */
int coved_snap_delete(struct coved *d, const struct coved_tenant *t, const char *id_or_name,
                      char *msg, size_t len);

/* coved_snap_dir_user() - whether a sandbox record (but @except) or a user
 * snapshot's chain stands on snapshot directory @dir; @who (may be NULL)
 * gets "sandbox ID" or "snapshot ID". */
bool coved_snap_dir_user(struct coved *d, const char *dir, const struct coved_sb *except, char *who,
                         size_t wlen);

#endif
