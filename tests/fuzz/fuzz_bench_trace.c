/* libFuzzer target: cove bench --work's reader of tracefs lines
 * (cli/bench_trace.c).  Each line of the input is parsed from a buffer of
 * exactly its length (ASan sees any read past it); what parses keeps its
 * strings terminated and inside their fields. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;
	while (off <= size) {
		const uint8_t *nl = memchr(data + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - (data + off)) : size - off;
		char *line = malloc(len ? len : 1);
		if (!line)
			return 0;
		memcpy(line, data + off, len);
		struct trace_event ev;
		if (trace_parse_line(line, len, &ev) == 0) {
			assert(ev.kind >= TRACE_NONE && ev.kind <= TRACE_LOST);
			assert(memchr(ev.reason, 0, sizeof(ev.reason)));
			assert(memchr(ev.exe, 0, sizeof(ev.exe)));
		}
		free(line);
		if (!nl)
			break;
		off += len + 1;
	}
	return 0;
}
