/* coved's HTTP replies (reply.h). */
#include "daemon/http/reply.h"

#include <stdlib.h>
#include <string.h>

void coved_reply_private(struct MHD_Response *r)
{
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
}

enum MHD_Result coved_json_reply(struct MHD_Connection *c, unsigned int status, json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	struct MHD_Response *r;
	if (text)
		r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	else
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	if (text)
		MHD_add_response_header(r, "Content-Type", "application/json");
	coved_reply_private(r);
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result too_many(struct MHD_Connection *c, json_t *msg);

/* msg as a JSON string: jansson refuses text that is not UTF-8 (a message
 * may quote a guest's or a log's bytes, or be cut inside a character), so
 * such a message goes with every byte above 0x7f made '?' rather than no
 * message at all. */
static json_t *message_string(const char *msg)
{
	json_t *s = json_string(msg ? msg : "");
	if (s)
		return s;
	char *ascii = strdup(msg);
	if (!ascii)
		return json_string("out of memory");
	for (unsigned char *p = (unsigned char *)ascii; *p; p++)
		if (*p > 0x7f)
			*p = '?';
	s = json_string(ascii);
	free(ascii);
	return s;
}

enum MHD_Result coved_json_error(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	json_t *m = message_string(msg);
	if (status == 429)
		return too_many(c, m);
	return coved_json_reply(c, status,
	                        json_pack("{s:i, s:o}", "code", (int)status, "message", m));
}

static enum MHD_Result too_many(struct MHD_Connection *c, json_t *msg)
{
	json_t *o = json_pack("{s:i, s:o}", "code", 429, "message", msg);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return MHD_NO;
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Retry-After", "1");
	coved_reply_private(r);
	enum MHD_Result ret = MHD_queue_response(c, 429, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result coved_text_reply(struct MHD_Connection *c, unsigned int status, const char *ctype,
                                 char *text, size_t len)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(text);
		return MHD_NO;
	}
	if (ctype)
		MHD_add_response_header(resp, "Content-Type", ctype);
	coved_reply_private(resp);
	enum MHD_Result ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

enum MHD_Result coved_stream_reply(struct MHD_Connection *c, const char *ctype, size_t block,
                                   MHD_ContentReaderCallback read, void *cls,
                                   MHD_ContentReaderFreeCallback done)
{
	struct MHD_Response *r =
	    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block, read, cls, done);
	if (!r) {
		done(cls);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", ctype);
	coved_reply_private(r);
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}
