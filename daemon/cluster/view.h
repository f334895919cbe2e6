/* The view of the cluster's nodes that one node keeps (dir.h's struct
 * cl_dir_state): their records, what each has committed, drain marks. */
#ifndef COVED_CLUSTER_VIEW_H
#define COVED_CLUSTER_VIEW_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/cluster/dir_state.h"

/* cl_view_refresh() - the nodes, their allocs and drain marks, read again.
 * Return: 0 or -errno (the old view stays). */
int cl_view_refresh(struct cl_dir_state *s, char *err, size_t errlen);
/* Whether node id's key is live in the view. */
bool cl_view_live(struct cl_dir_state *s, const char *id);
void cl_view_free(struct cl_vnode *v, size_t n);
/* The vnode of id in v (NULL: none); cl_vnode_get adds it (not live) when
 * missing.  Called with the state's mu held. */
struct cl_vnode *cl_vnode_find(struct cl_vnode *v, size_t n, const char *id);
struct cl_vnode *cl_vnode_get(struct cl_vnode **v, size_t *n, const char *id);

#endif
