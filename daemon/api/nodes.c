/* The cluster's nodes as a tenant's key sees them. */
#include "daemon/api/nodes.h"

#include <stdbool.h>

json_t *coved_nodes_public(const json_t *status)
{
	const json_t *nodes = json_object_get(status, "nodes");
	if (!json_is_array(nodes))
		return NULL;
	json_t *out = json_array();
	size_t i;
	const json_t *n;
	json_array_foreach(nodes, i, n)
	{
		const json_t *id = json_object_get(n, "id"), *st = json_object_get(n, "state");
		const json_t *ready = json_object_get(n, "ready"),
		             *dr = json_object_get(n, "draining");
		const json_t *v = json_object_get(n, "vcpus"),
		             *vc = json_object_get(n, "vcpus_committed");
		const json_t *m = json_object_get(n, "memory_mib");
		const json_t *mc = json_object_get(n, "memory_mib_committed");
		if (!out || !json_is_string(id) || !json_is_string(st) || !json_is_boolean(ready) ||
		    !json_is_boolean(dr) || !json_is_integer(v) || !json_is_integer(vc) ||
		    !json_is_integer(m) || !json_is_integer(mc))
			continue;
		json_array_append_new(out, json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O, s:O}",
		                                     "id", id, "state", st, "leaseOk", ready,
		                                     "draining", dr, "vcpus", v, "vcpusCommitted",
		                                     vc, "memoryMiB", m, "memoryMiBCommitted", mc));
	}
	return out;
}
