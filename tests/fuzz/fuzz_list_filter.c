/* libFuzzer target: a list query's metadata, state and template filters
 * (daemon/sandboxes/list_filter.c) against a fixed sandbox.  The bytes
 * are a client's query: no read past them, no crash; an empty filter
 * passes a running sandbox. */
#include <assert.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/sandboxes/list_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *q = malloc(size + 1);
	if (!q)
		return 0;
	memcpy(q, data, size);
	q[size] = 0;
	json_t *meta = json_pack("{s:s, s:s, s:s}", "owner", "a b", "note", "<x>&y=z", "", "e");
	struct coved_list_filter f = { .metadata = q };
	bool m = coved_list_filter_match(&f, "running", "base", meta);
	if (!q[0])
		assert(m);
	f = (struct coved_list_filter){ .states = q, .template_id = q };
	(void)coved_list_filter_match(&f, "paused", "base", meta);
	(void)coved_list_filter_match(&f, "dead", NULL, NULL);
	json_decref(meta);
	free(q);
	return 0;
}
