/* libFuzzer target: a snapshot state file as cove-vmm --restore reads it
 * (sf_parse validates the container; every section lookup then checks its
 * size), and a VMM control API request line. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "snapshot/state_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

volatile uint8_t fuzz_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sf_reader r;
	char err[256];
	if (sf_parse(&r, data, size, err, sizeof(err)) == 0) {
		for (uint32_t i = 0; i < r.nsections; i++) {
			const struct sf_section *s = &r.sections[i];
			const uint8_t *p = sf_find(&r, s->tag, s->instance, s->len);
			for (uint64_t j = 0; p && j < s->len; j++)
				fuzz_sink += p[j];
		}
		sf_reader_free(&r);
	}
	/* The same bytes as an API request line (without a VM). */
	char *line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	char out[1024];
	vmm_api_handle(NULL, line, -1, out, sizeof(out));
	free(line);
	return 0;
}
