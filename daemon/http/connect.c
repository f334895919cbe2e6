/* Connect protocol framing, JSON codec (connect.h). */
#include "daemon/http/connect.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"

int connect_unwrap(const uint8_t *body, size_t len, const uint8_t **msg, size_t *msglen, char *err,
                   size_t errlen)
{
	if (!body || len < CONNECT_HDR)
		return errf(err, errlen, -EPROTO, "the request is not an enveloped message");
	uint8_t flags = body[0];
	uint32_t n = (uint32_t)body[1] << 24 | (uint32_t)body[2] << 16 | (uint32_t)body[3] << 8 |
	             (uint32_t)body[4];
	if (flags & CONNECT_FLAG_COMPRESSED)
		return errf(err, errlen, -EPROTO, "compressed messages are not supported");
	if (flags != 0)
		return errf(err, errlen, -EPROTO, "unexpected envelope flags 0x%02x", flags);
	if (n > CONNECT_MSG_MAX)
		return errf(err, errlen, -EMSGSIZE, "the request message is over %u bytes",
		            CONNECT_MSG_MAX);
	if (len - CONNECT_HDR != n)
		return errf(err, errlen, -EPROTO,
		            "the request holds %zu bytes after its envelope, "
		            "the envelope says %u",
		            len - CONNECT_HDR, n);
	*msg = body + CONNECT_HDR;
	*msglen = n;
	return 0;
}

void connect_envelope(uint8_t out[CONNECT_HDR], uint8_t flags, uint32_t len)
{
	out[0] = flags;
	out[1] = (uint8_t)(len >> 24);
	out[2] = (uint8_t)(len >> 16);
	out[3] = (uint8_t)(len >> 8);
	out[4] = (uint8_t)len;
}

uint8_t *connect_frame(json_t *obj, uint8_t flags, size_t *len)
{
	char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
	json_decref(obj);
	if (!text)
		return NULL;
	size_t n = strlen(text);
	uint8_t *out = n <= UINT32_MAX ? malloc(CONNECT_HDR + n) : NULL;
	if (out) {
		connect_envelope(out, flags, (uint32_t)n);
		memcpy(out + CONNECT_HDR, text, n);
		*len = CONNECT_HDR + n;
	}
	free(text);
	return out;
}

uint8_t *connect_end_frame(const char *code, const char *message, size_t *len)
{
	json_t *o = code ? json_pack("{s:{s:s, s:s}}", "error", "code", code, "message",
	                             message ? message : "")
	                 : json_object();
	return connect_frame(o, CONNECT_FLAG_END, len);
}

static const struct {
	const char *code;
	unsigned int status;
} codes[] = {
	{ "canceled", 499 },
	{ "unknown", 500 },
	{ "invalid_argument", 400 },
	{ "deadline_exceeded", 504 },
	{ "not_found", 404 },
	{ "already_exists", 409 },
	{ "permission_denied", 403 },
	{ "resource_exhausted", 429 },
	{ "failed_precondition", 400 },
	{ "aborted", 409 },
	{ "out_of_range", 400 },
	{ "unimplemented", 501 },
	{ "internal", 500 },
	{ "unavailable", 503 },
	{ "data_loss", 500 },
	{ "unauthenticated", 401 },
};

unsigned int connect_http_status(const char *code)
{
	for (size_t i = 0; code && i < sizeof(codes) / sizeof(codes[0]); i++) {
		if (!strcmp(codes[i].code, code))
			return codes[i].status;
	}
	return 500;
}

const char *connect_code_from_errno(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case ENOENT:
	case ESRCH:
		return "not_found";
	case EEXIST:
	case ENOTEMPTY:
		return "already_exists";
	case EACCES:
	case EPERM:
	case EROFS:
		return "permission_denied";
	case EINVAL:
	case ENOTDIR:
	case EISDIR:
	case ENAMETOOLONG:
	case ELOOP:
		return "invalid_argument";
	case ENOSPC:
	case EDQUOT:
	case EAGAIN:
	case EMFILE:
	case ENOMEM:
	case EFBIG:
		return "resource_exhausted";
	case EPIPE:
	case EBUSY:
	case EXDEV:
		return "failed_precondition";
	case ETIMEDOUT:
		return "deadline_exceeded";
	case ECONNREFUSED:
	case ECONNRESET:
		return "unavailable";
	default:
		return "internal";
	}
}

int connect_timeout_ms(const char *value, uint64_t *ms)
{
	if (!value)
		return -EINVAL;
	size_t n = strlen(value);
	if (n < 1 || n > 10)
		return -EINVAL;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (value[i] < '0' || value[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(value[i] - '0');
	}
	*ms = v;
	return 0;
}
