/* The cluster's records in etcd (docs/cluster.md, "Keys"), to and from
 * JSON.  Pure; what etcd hands back is input like any other: every field
 * is typed and bounded, a record that is not is refused whole. */
#ifndef COVED_CLUSTER_RECORDS_H
#define COVED_CLUSTER_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_PREFIX_NODES "/cove/nodes/"
#define CL_PREFIX_ALLOC "/cove/alloc/"
#define CL_PREFIX_DRAIN "/cove/drain/"
#define CL_PREFIX_SB    "/cove/sandboxes/"

#define CL_NODE_ID_MAX 32
#define CL_ADDR_MAX    255
#define CL_TEMPLATES   256 /* template and user snapshot names a node record lists */

/* What a node claims of its host, so that two nodes on one host never
 * share it (cl_ranges_collide): its state and runtime directories, cgroup
 * parent, and the jail uids and network indexes it hands out. */
struct cl_ranges {
	char state_dir[256], runtime_dir[256], cgroup_parent[256]; /* "": libcove's default */
	uint64_t jail_first, jail_last, net_first, net_last;
	bool given; /* a node record without them: never a collision */
};

/* /cove/nodes/<id>, under the node's lease. */
struct cl_node_rec {
	char id[CL_NODE_ID_MAX + 1];
	char addr[CL_ADDR_MAX + 1]; /* base URL: http(s)://HOST:PORT */
	char version[32];
	char host[64];
	uint64_t vcpus, memory_mib; /* capacity */
	uint64_t running, paused;
	char *templates[CL_TEMPLATES]; /* malloc'ed names */
	size_t ntemplates;
	struct cl_ranges ranges;
};

/* /cove/alloc/<id>: what the node has committed (running sandboxes). */
struct cl_alloc {
	uint64_t vcpus, memory_mib;
};

/* /cove/sandboxes/<id>: the directory. */
struct cl_dir {
	char node[CL_NODE_ID_MAX + 1];
	char state[12]; /* running, paused, stopped, dead */
	char tenant[65];
	char template_id[129];
	uint64_t vcpus, memory_mib;
	bool shared; /* its pause snapshot is on storage every node mounts */
	char reason[200];
};

char *cl_node_encode(const struct cl_node_rec *n);
int cl_node_decode(const char *text, size_t len, struct cl_node_rec *n);
void cl_node_clear(struct cl_node_rec *n);
bool cl_node_has_template(const struct cl_node_rec *n, const char *name);

char *cl_alloc_encode(const struct cl_alloc *a);
int cl_alloc_decode(const char *text, size_t len, struct cl_alloc *a);

char *cl_dir_encode(const struct cl_dir *r);
int cl_dir_decode(const char *text, size_t len, struct cl_dir *r);
/* Whether the record commits its node's vCPUs and memory. */
bool cl_dir_commits(const struct cl_dir *r);

/* cl_ranges_collide() - whether two nodes on one host would hand out the
 * same thing: the same state dir, or, with runtime dirs of their own
 * (whose claim files keep nodes that share one apart), the same cgroup
 * parent or overlapping jail uids or network indexes.  why says which. */
bool cl_ranges_collide(const struct cl_ranges *a, const struct cl_ranges *b, char *why, size_t len);

/* cl_id_ok() - a node or sandbox id: [a-z0-9-], 1 to max characters. */
bool cl_id_ok(const char *s, size_t max);

#endif
