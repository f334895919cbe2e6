/* The view of the cluster's nodes (view.h). */
#include "daemon/cluster/view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon/cluster/etcd.h"

void cl_view_free(struct cl_vnode *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cl_node_clear(&v[i].rec);
	free(v);
}

struct cl_vnode *cl_vnode_find(struct cl_vnode *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].rec.id, id) == 0)
			return &v[i];
	return NULL;
}

/* The vnode of id in v, added (not live) when missing. */
struct cl_vnode *cl_vnode_get(struct cl_vnode **v, size_t *n, const char *id)
{
	struct cl_vnode *x = cl_vnode_find(*v, *n, id);
	if (x || !cl_id_ok(id, CL_NODE_ID_MAX))
		return x;
	/* Room doubles at each power of two: a view of N nodes copies O(N). */
	if (*n == 0 || (*n & (*n - 1)) == 0) {
		struct cl_vnode *g = realloc(*v, (*n ? 2 * *n : 1) * sizeof(**v));
		if (!g)
			return NULL;
		*v = g;
	}
	struct cl_vnode *g = *v;
	x = &g[(*n)++];
	memset(x, 0, sizeof(*x));
	snprintf(x->rec.id, sizeof(x->rec.id), "%s", id);
	return x;
}

int cl_view_refresh(struct cl_dir_state *s, char *err, size_t errlen)
{
	struct etcd_kvs nodes = { 0 }, allocs = { 0 }, drains = { 0 };
	int r = etcd_range_prefix(s->e, CL_PREFIX_NODES, &nodes, err, errlen);
	if (!r)
		r = etcd_range_prefix(s->e, CL_PREFIX_ALLOC, &allocs, err, errlen);
	if (!r)
		r = etcd_range_prefix(s->e, CL_PREFIX_DRAIN, &drains, err, errlen);
	struct cl_vnode *v = NULL, *x;
	size_t n = 0;
	for (size_t i = 0; !r && i < nodes.n; i++) {
		struct cl_node_rec rec;
		if (cl_node_decode(nodes.kv[i].value, nodes.kv[i].value_len, &rec) < 0)
			continue; /* a malformed node record: that node is not placed on */
		if (strcmp(nodes.kv[i].key + strlen(CL_PREFIX_NODES), rec.id) != 0 ||
		    !(x = cl_vnode_get(&v, &n, rec.id))) {
			cl_node_clear(&rec);
			continue;
		}
		cl_node_clear(&x->rec);
		x->rec = rec;
		x->live = true;
	}
	for (size_t i = 0; !r && i < allocs.n; i++) {
		struct cl_alloc a;
		const char *id = allocs.kv[i].key + strlen(CL_PREFIX_ALLOC);
		if (cl_alloc_decode(allocs.kv[i].value, allocs.kv[i].value_len, &a) == 0 &&
		    (x = cl_vnode_get(&v, &n, id))) {
			x->alloc = a;
			x->alloc_rev = allocs.kv[i].mod_rev;
		}
	}
	for (size_t i = 0; !r && i < drains.n; i++)
		if ((x = cl_vnode_find(v, n, drains.kv[i].key + strlen(CL_PREFIX_DRAIN))))
			x->draining = true;
	etcd_kvs_free(&nodes);
	etcd_kvs_free(&allocs);
	etcd_kvs_free(&drains);
	if (r) {
		cl_view_free(v, n);
		return r;
	}
	pthread_mutex_lock(&s->mu);
	cl_view_free(s->nodes, s->nnodes);
	s->nodes = v;
	s->nnodes = n;
	s->view_ms = wall_ms();
	pthread_mutex_unlock(&s->mu);
	return 0;
}

bool cl_view_live(struct cl_dir_state *s, const char *id)
{
	pthread_mutex_lock(&s->mu);
	struct cl_vnode *x = cl_vnode_find(s->nodes, s->nnodes, id);
	bool live = x && x->live;
	pthread_mutex_unlock(&s->mu);
	return live;
}
