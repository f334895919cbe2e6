/* The cluster's shared state in etcd as one node sees it
 * (docs/cluster.md): the view of the nodes and what each has committed,
 * the sandbox directory (cached: routes keep working while etcd is away),
 * and the transactions that place a sandbox and move its record.  No
 * threads and no HTTP here: cluster.c drives it, tests drive it alone. */
#ifndef COVED_CLUSTER_DIR_H
#define COVED_CLUSTER_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/cluster/dir_state.h"

struct etcd;

/* What a directory lookup says about a sandbox id. */
enum cl_where {
	CL_NOWHERE, /* no record: not a sandbox of the cluster */
	CL_HERE,    /* this node owns it */
	CL_THERE,   /* a live node owns it: addr set */
	CL_LOST,    /* its node is gone (or the record says dead) */
	CL_UNKNOWN, /* etcd cannot be reached and the cache has nothing */
};

int cl_dir_init(struct cl_dir_state *s, struct etcd *e, const char *self);
void cl_dir_fini(struct cl_dir_state *s);

/* cl_place() - best of K among the view's ready nodes, then the
 * reservation: one transaction that raises the chosen node's alloc (on
 * the revision read) and writes the sandbox's record (running, on that
 * node), so two placers never overcommit a node.  skip: node ids already
 * refused (NULL-ended, may be NULL).  Return: 0 with node (its id) and
 * addr (its base URL) set; -ENOSPC when no node can take it; -errno. */
int cl_place(struct cl_dir_state *s, const struct cl_dir *want, const char *sbid,
             const char *const *skip, char *node, size_t nodelen, char *addr, size_t addrlen,
             char *err, size_t errlen);

/* cl_dir_set() - the record of sbid becomes want (NULL: deleted), in one
 * transaction that also moves the vCPUs and memory between allocs when
 * what is committed changes.  only_mine: refuse (-EPERM) when another
 * node owns the record now.  Return: 0, -EPERM, or -errno (etcd). */
int cl_dir_set(struct cl_dir_state *s, const char *sbid, const struct cl_dir *want, bool only_mine,
               char *err, size_t errlen);

/* cl_dir_lookup() - where sbid lives: the cache, else etcd (cached then).
 * rec (may be NULL) gets the record; addr the owner's base URL. */
enum cl_where cl_dir_lookup(struct cl_dir_state *s, const char *sbid, struct cl_dir *rec,
                            char *addr, size_t addrlen);

/* cl_dir_scan() - every record, read again into the cache; each one whose
 * node is not live and that is running (or paused with no shared
 * snapshot) is marked dead, "node lost", on its revision (one node wins).
 * Return: records marked, or -errno. */
int cl_dir_scan(struct cl_dir_state *s, char *err, size_t errlen);

/* cl_dir_claim() - takes over sbid's record as seen (its node and
 * state as lookup gave them) for want, in one transaction on the revision
 * it was seen at, never retried: of two nodes claiming it at once, one
 * wins.  Return: 1 won, 0 another node changed it first, -errno. */
int cl_dir_claim(struct cl_dir_state *s, const char *sbid, const struct cl_dir *seen,
                 const struct cl_dir *want, char *err, size_t errlen);

/* cl_alloc_settle() - this node's alloc set to what the directory's
 * records running on it add up to (a reconcile after a restart or a lost
 * lease).  On the alloc's revision: a placement racing it wins, and the
 * next settle looks again.  Return: 0 or -errno. */
int cl_alloc_settle(struct cl_dir_state *s, char *err, size_t errlen);

/* cl_dir_forget() - drops sbid from the cache (its record is gone). */
void cl_dir_forget(struct cl_dir_state *s, const char *sbid);

#endif
