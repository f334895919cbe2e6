/* libFuzzer target: the working-set record beside a snapshot's memory
 * (common/wsrec.c), a file every restore reads.  A record that parses
 * stays inside the RAM it names and encodes back to the same bytes. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wsrec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wsrec w;
	char err[160];
	if (wsrec_parse(data, size, 0, &w, err, sizeof(err)) != 0) {
		assert(err[0] && !strchr(err, '\n'));
		return 0;
	}
	uint64_t pages = 0;
	for (uint32_t i = 0; i < w.count; i++) {
		assert(w.r[i].pages > 0);
		assert((uint64_t)w.r[i].first + w.r[i].pages <= w.ram_bytes / WSREC_PAGE);
		assert(i == 0 || w.r[i].first >= w.r[i - 1].first + w.r[i - 1].pages);
		pages += w.r[i].pages;
	}
	assert(pages == w.pages);
	uint8_t *out = malloc(size);
	assert(out);
	assert(wsrec_format(w.r, w.count, w.ram_bytes, out, size) == size);
	assert(!memcmp(out, data, size));
	free(out);
	wsrec_free(&w);
	return 0;
}
