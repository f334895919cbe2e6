/* libFuzzer target: what coved's cluster mode reads from etcd and from
 * other nodes (daemon/cluster/records.c, fwd_http.c): the node, alloc and
 * directory records, and an owner's status line and Content-Length.  A
 * record is refused whole or comes back typed and bounded, and one that
 * decodes encodes again to one that decodes the same. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/fwd_http.h"
#include "daemon/cluster/records.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct cl_node_rec n;
	if (cl_node_decode(buf, size, &n) == 0) {
		assert(cl_id_ok(n.id, CL_NODE_ID_MAX) && n.ntemplates <= CL_TEMPLATES);
		char *s = cl_node_encode(&n);
		struct cl_node_rec again;
		assert(s && cl_node_decode(s, strlen(s), &again) == 0);
		assert(strcmp(again.id, n.id) == 0 && again.vcpus == n.vcpus &&
		       again.ntemplates == n.ntemplates);
		cl_node_clear(&again);
		free(s);
		cl_node_clear(&n);
	}
	struct cl_dir d;
	if (cl_dir_decode(buf, size, &d) == 0) {
		assert(cl_id_ok(d.node, CL_NODE_ID_MAX));
		char *s = cl_dir_encode(&d);
		struct cl_dir again;
		assert(s && cl_dir_decode(s, strlen(s), &again) == 0);
		assert(memcmp(&again, &d, sizeof(d)) == 0);
		free(s);
	}
	struct cl_alloc a;
	if (cl_alloc_decode(buf, size, &a) == 0) {
		char *s = cl_alloc_encode(&a);
		struct cl_alloc again;
		assert(s && cl_alloc_decode(s, strlen(s), &again) == 0 && again.vcpus == a.vcpus &&
		       again.memory_mib == a.memory_mib);
		free(s);
	}
	long st = fwd_parse_status(buf, size);
	assert(st == -1 || (st >= 100 && st <= 999));
	char *z = malloc(size + 1);
	if (z) {
		memcpy(z, data, size);
		z[size] = 0;
		int64_t len = fwd_parse_length(z);
		assert(len >= -1);
		free(z);
	}
	return 0;
}
