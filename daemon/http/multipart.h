/* A streaming multipart/form-data parser (RFC 7578 over RFC 2046): bytes go
 * in as they arrive, any chunking; each part's body comes out through
 * callbacks without being held whole.  Bounded: the parser's memory is
 * fixed (sizeof(struct mp_parser)), a part's header block is at most
 * MP_HDR_MAX bytes.  Pure; fuzzed by fuzz_multipart. */
#ifndef COVED_HTTP_MULTIPART_H
#define COVED_HTTP_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MP_BOUNDARY_MAX 70 /* RFC 2046 */
#define MP_HDR_MAX      8192
#define MP_NAME_MAX     4096
#define MP_WORK         (64 * 1024 + MP_HDR_MAX)

struct mp_callbacks {
	/* A part starts: its form field name and file name ("" when absent).
	 * Each callback returns 0, or a negative errno that stops the parse
	 * (mp_feed returns it). */
	int (*part_begin)(void *opaque, const char *name, const char *filename);
	int (*data)(void *opaque, const uint8_t *buf, size_t len);
	int (*part_end)(void *opaque);
};

enum mp_state { MP_PREAMBLE, MP_AFTER_DELIM, MP_HEADERS, MP_BODY, MP_DONE, MP_FAILED };

struct mp_parser {
	char delim[MP_BOUNDARY_MAX + 5]; /* "\r\n--" boundary */
	size_t dlen;
	enum mp_state state;
	uint8_t work[MP_WORK];
	size_t wlen;
	bool at_start; /* the body's first bytes: "--boundary" without the CRLF */
	const struct mp_callbacks *cb;
	void *opaque;
	char name[MP_NAME_MAX], filename[MP_NAME_MAX];
};

/* The boundary parameter of a Content-Type "multipart/form-data; boundary=X"
 * (quoted or not): 0, or -EINVAL for another type or a bad boundary. */
int mp_boundary(const char *content_type, char *out, size_t outlen)
    __attribute__((warn_unused_result));

/* -EINVAL for a boundary that is empty, too long or has a CR/LF. */
int mp_init(struct mp_parser *p, const char *boundary, const struct mp_callbacks *cb, void *opaque)
    __attribute__((warn_unused_result));
/* 0, -EPROTO (malformed; the parser is failed), or a callback's error. */
int mp_feed(struct mp_parser *p, const uint8_t *buf, size_t len)
    __attribute__((warn_unused_result));
/* At the end of the body: 0 when the closing delimiter was seen, else
 * -EPROTO. */
int mp_finish(struct mp_parser *p) __attribute__((warn_unused_result));

#endif
