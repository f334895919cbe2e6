/* libFuzzer target: guest text on its way to the user's terminal.  The
 * input goes through text_filter() in chunks cut at sizes its first byte
 * chooses (a sequence may span calls) and, as one string, through
 * text_clean().  Both outputs are checked: no ESC survives except as the
 * start of an SGR sequence (ESC [ digits ; : m), and text_clean leaves no
 * control byte but tab and newline. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_sgr_only(const char *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (out[i] != 0x1b)
			continue;
		if (i + 1 >= n || out[i + 1] != '[')
			abort();
		size_t j = i + 2;
		while (j < n &&
		       ((out[j] >= '0' && out[j] <= '9') || out[j] == ';' || out[j] == ':'))
			j++;
		if (j >= n || out[j] != 'm')
			abort();
		i = j;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t cut = 1u + (data[0] & 31u);
	data++;
	size--;
	struct text_filter f;
	text_filter_init(&f);
	char *out = malloc(2 * size + 64 + 1);
	size_t total = 0;
	for (size_t off = 0; off < size; off += cut) {
		size_t len = size - off < cut ? size - off : cut;
		total += text_filter(&f, data + off, len, out + total, 2 * len + 64);
	}
	/* A sequence cut at the end stays pending inside the filter: nothing
	 * of it is in out yet. */
	check_sgr_only(out, total);
	free(out);

	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = 0;
	text_clean(s);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f)
			abort();
	free(s);
	return 0;
}
