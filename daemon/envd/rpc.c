/* envd's Connect answers and the sandbox behind a request (rpc.h). */
#include "daemon/envd/rpc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/connect.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/sandbox.h"

enum MHD_Result envd_connect_error(struct MHD_Connection *c, const char *code, const char *msg)
{
	json_t *o = json_pack("{s:s, s:s}", "code", code, "message", msg ? msg : "");
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return MHD_NO;
	return coved_text_reply(c, connect_http_status(code), "application/json", text,
	                        strlen(text));
}

enum MHD_Result envd_stream_error(struct MHD_Connection *c, const char *code, const char *msg)
{
	size_t len = 0;
	uint8_t *f = connect_end_frame(code, msg, &len);
	if (!f)
		return MHD_NO;
	return coved_text_reply(c, MHD_HTTP_OK, "application/connect+json", (char *)f, len);
}

struct cove_sandbox *envd_cove(struct envd_req *r, const char **code, char *msg, size_t msglen)
{
	struct cove_sandbox *sb = r->sb ? coved_sb_cove(r->sb) : NULL;
	if (!sb) {
		*code = "unavailable";
		snprintf(msg, msglen, "sandbox %s is not running", r->sb ? coved_sb_id(r->sb) : "");
	}
	return sb;
}

const char *envd_req_user(const struct envd_req *r)
{
	return r->user[0] ? r->user : NULL;
}

int64_t envd_header_ms(struct MHD_Connection *c, const char *name)
{
	uint64_t ms = 0;
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
	if (!v || connect_timeout_ms(v, &ms) < 0)
		return 0;
	return (int64_t)ms;
}

int envd_keepalive_ms(struct MHD_Connection *c)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Keepalive-Ping-Interval");
	long s = v ? strtol(v, NULL, 10) : 0;
	if (s < 1 || s > ENVD_KEEPALIVE_MAX_S)
		s = ENVD_KEEPALIVE_MAX_S;
	return (int)s * 1000;
}

ssize_t envd_out_read(struct envd_out *o, void (*next)(void *cls, bool nowait), void *cls,
                      char *buf, size_t max)
{
	while (o->off == o->len) {
		free(o->buf);
		o->buf = NULL;
		o->len = o->off = 0;
		if (o->finished)
			return MHD_CONTENT_READER_END_OF_STREAM;
		/* MHD asks again to fill its buffer before it writes: with
		 * nothing ready now, 0 lets it send what it has first. */
		bool nowait = o->gave;
		o->gave = false;
		next(cls, nowait);
		if (nowait && o->off == o->len && !o->finished)
			return 0;
	}
	o->gave = true;
	size_t n = o->len - o->off < max ? o->len - o->off : max;
	memcpy(buf, o->buf + o->off, n);
	o->off += n;
	return (ssize_t)n;
}
