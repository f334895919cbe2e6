/* libFuzzer target: coved's request bodies (daemon/api/body.c) as they come
 * off the network: the depth scan, the JSON load and every typed parser.
 * A body the parsers accept holds only bounded, checked values. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/api/body.h"
#include "daemon/http/json_body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	json_t *o = coved_body_load((const char *)data, size, 16, err, sizeof(err));
	if (!o) {
		assert(err[0]);
		return 0;
	}
	struct coved_create c;
	if (coved_parse_create(o, &c, err, sizeof(err)) == 0) {
		assert(c.template_id[0] && strlen(c.template_id) <= COVED_TEMPLATE_LEN_MAX);
		assert(!c.metadata || json_object_size(c.metadata) <= COVED_META_MAX);
		assert(!c.env_vars || json_object_size(c.env_vars) <= COVED_ENV_MAX);
		assert(c.cpus <= 64);
		coved_create_free(&c);
	}
	struct coved_net n;
	if (coved_parse_net(o, &n, err, sizeof(err)) == 0)
		coved_net_free(&n);
	uint64_t t;
	unsigned int count;
	(void)coved_parse_timeout(o, true, &t, err, sizeof(err));
	if (coved_parse_fork(o, &count, &t, err, sizeof(err)) == 0)
		assert(count >= 1 && count <= COVED_FORK_MAX);
	json_decref(o);
	return 0;
}
