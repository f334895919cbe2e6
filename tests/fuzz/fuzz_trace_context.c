/* libFuzzer target: what callers and the environment hand coved's
 * traces: a traceparent (a parse must format back to the same bytes), a
 * tracestate, an OTEL_EXPORTER_OTLP_HEADERS value (every header line is
 * "Key: value" on one line), and a journal line as spans (every span has
 * hex ids of 32 and 16 characters and string times).  The first byte
 * picks the parser. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/trace/context.h"
#include "daemon/trace/span.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_span(json_t *s)
{
	json_t *t = json_object_get(s, "traceId"), *i = json_object_get(s, "spanId");
	if (json_string_length(t) != 32 || json_string_length(i) != 16 ||
	    !json_is_string(json_object_get(s, "startTimeUnixNano")) ||
	    !json_is_string(json_object_get(s, "endTimeUnixNano")))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *b = (const char *)data + 1;
	size_t n = size - 1;
	switch (data[0] % 4) {
	case 0: {
		struct trace_ctx c;
		if (trace_parse_parent(b, n, &c) == 0) {
			char out[56];
			trace_format_parent(&c, out);
			if (n != 55 || memcmp(out, b, 55) != 0 || !c.set)
				abort();
		}
		break;
	}
	case 1:
		trace_state_valid(b, n);
		break;
	case 2: {
		struct trace_headers h;
		char err[200];
		if (trace_parse_headers(b, n, &h, err, sizeof(err)) == 0) {
			for (size_t k = 0; k < h.n; k++)
				if (!strstr(h.line[k], ": ") || strpbrk(h.line[k], "\r\n"))
					abort();
			trace_headers_free(&h);
		}
		break;
	}
	default: {
		/* Lines of a journal, stamped or hostile, through one root. */
		struct trace_root r = { 0 };
		json_t *spans = json_array();
		const char *p = b, *end = b + n;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
			json_t *l = json_loadb(p, len, 0, NULL);
			if (l && (data[0] & 4))
				trace_stamp(&r, NULL, "t", l);
			trace_line_spans(&r, l, spans);
			json_decref(l);
			p += len + 1;
		}
		size_t k;
		json_t *s;
		json_array_foreach(spans, k, s) check_span(s);
		json_decref(spans);
		trace_root_fini(&r);
	}
	}
	return 0;
}
