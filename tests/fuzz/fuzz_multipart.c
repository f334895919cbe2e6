/* libFuzzer target: a multipart/form-data upload body as POST /files takes
 * it (daemon/http/multipart.c), fed in pieces whose sizes come from the input.
 * The first byte picks the chunking; the boundary is fixed ("b0undary"), as
 * the Content-Type header gives it before the body.  The bytes handed to
 * the callbacks never exceed the input, and the parts open and close in
 * pairs. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	size_t bytes;
	int open, parts;
};

static int on_begin(void *o, const char *name, const char *filename)
{
	struct seen *s = o;
	assert(strlen(name) < MP_NAME_MAX && strlen(filename) < MP_NAME_MAX);
	assert(!s->open);
	s->open = 1;
	s->parts++;
	return 0;
}

static int on_data(void *o, const uint8_t *buf, size_t len)
{
	struct seen *s = o;
	assert(s->open && buf && len);
	s->bytes += len;
	return 0;
}

static int on_end(void *o)
{
	struct seen *s = o;
	assert(s->open);
	s->open = 0;
	return 0;
}

static const struct mp_callbacks cbs = { on_begin, on_data, on_end };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = (size_t)data[0] + 1;
	data++;
	size--;
	static struct mp_parser p;
	struct seen s = { 0 };
	if (mp_init(&p, "b0undary", &cbs, &s) != 0)
		abort();
	int r = 0;
	for (size_t i = 0; i < size && r == 0; i += step) {
		size_t n = size - i < step ? size - i : step;
		r = mp_feed(&p, data + i, n);
	}
	assert(s.bytes <= size);
	if (r == 0 && mp_finish(&p) == 0)
		assert(!s.open);
	char b[MP_BOUNDARY_MAX + 1];
	char ct[512];
	size_t n = size < sizeof(ct) - 1 ? size : sizeof(ct) - 1;
	memcpy(ct, data, n);
	ct[n] = 0;
	if (mp_boundary(ct, b, sizeof(b)) == 0)
		assert(b[0] && strlen(b) <= MP_BOUNDARY_MAX);
	return 0;
}
