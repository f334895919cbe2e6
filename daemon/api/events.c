/* /events and /webhooks (events.h).  /events is an MHD callback reader:
 * each call waits for the tenant's next event at most until the next
 * keepalive comment (15 s), which is also how a client that left is
 * seen; it ends when coved stops.  A client that reconnects with
 * Last-Event-ID gets what it missed while the ring still holds it. */
#include "daemon/api/events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon/http/json_body.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/events.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/webhooks.h"

#define SSE_KEEPALIVE_MS 15000

struct sub {
	struct coved *d;
	char tenant[COVED_TENANT_LEN + 1];
	uint64_t after;
	char *pend;
	size_t len, sent;
	int64_t next_keepalive;
};

/* The next thing to send: an event, or a keepalive.  Return: 0, or -1 at
 * the end (coved stopping). */
static int sub_fill(struct sub *s)
{
	free(s->pend);
	s->pend = NULL;
	s->len = s->sent = 0;
	while (!coved_events_closed(s->d)) {
		int64_t left = s->next_keepalive - mono_ms();
		if (left <= 0) {
			s->next_keepalive = mono_ms() + SSE_KEEPALIVE_MS;
			s->pend = strdup(": keepalive\n\n");
			s->len = s->pend ? strlen(s->pend) : 0;
			return s->pend ? 0 : -1;
		}
		json_t *ev = coved_events_next(s->d, s->tenant, s->after, (int)left, &s->after);
		if (!ev)
			continue;
		char *data = json_dumps(ev, JSON_COMPACT);
		const char *type = json_string_value(json_object_get(ev, "type"));
		int n = data ? asprintf(&s->pend, "id: %llu\nevent: %s\ndata: %s\n\n",
		                        (unsigned long long)s->after, type ? type : "event", data)
		             : -1;
		free(data);
		json_decref(ev);
		if (n < 0) {
			s->pend = NULL;
			return -1;
		}
		s->len = (size_t)n;
		return 0;
	}
	return -1;
}

static ssize_t sub_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct sub *s = cls;
	if (s->sent == s->len && sub_fill(s) < 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	size_t n = s->len - s->sent;
	if (n > max)
		n = max;
	memcpy(buf, s->pend + s->sent, n);
	s->sent += n;
	return (ssize_t)n;
}

static void sub_free(void *cls)
{
	struct sub *s = cls;
	free(s->pend);
	free(s);
}

static enum MHD_Result events_get(struct coved *d, struct coved_tenant *t, struct MHD_Connection *c)
{
	struct sub *s = calloc(1, sizeof(*s));
	if (!s)
		return coved_json_error(c, 500, "out of memory");
	s->d = d;
	snprintf(s->tenant, sizeof(s->tenant), "%s", t->name);
	const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
	char *end;
	unsigned long long id = last ? strtoull(last, &end, 10) : 0;
	s->after = last && *last && !*end ? id : coved_events_now(d);
	/* A first comment: the client sees the stream open before any event. */
	s->pend = strdup(": subscribed\n\n");
	s->len = s->pend ? strlen(s->pend) : 0;
	s->next_keepalive = mono_ms() + SSE_KEEPALIVE_MS;
	return coved_stream_reply(c, "text/event-stream", 4096, sub_read, s, sub_free);
}

static enum MHD_Result hooks(struct coved *d, struct coved_tenant *t, struct MHD_Connection *c,
                             const char *method, const char *id, const char *body, size_t len)
{
	struct coved_webhooks *w = coved_events_hooks(d);
	char msg[400];
	if (!id && strcmp(method, "GET") == 0)
		return coved_json_reply(c, 200, coved_webhook_list(w, t->name));
	if (!id && strcmp(method, "POST") == 0) {
		json_t *b = coved_body_load(body, len, d->cfg.max_depth, msg, sizeof(msg));
		if (!b)
			return coved_json_error(c, 400, msg);
		json_t *out = NULL;
		int st = coved_webhook_add(w, t->name, b, &out, msg, sizeof(msg));
		json_decref(b);
		return st ? coved_json_error(c, (unsigned int)st, msg)
		          : coved_json_reply(c, 201, out);
	}
	if (id && strcmp(method, "DELETE") == 0) {
		int st = coved_webhook_delete(w, t->name, id, msg, sizeof(msg));
		return st ? coved_json_error(c, (unsigned int)st, msg)
		          : coved_json_reply(c, 204, NULL);
	}
	return coved_json_error(c, 405, "method not allowed on this path");
}

bool coved_events_route(struct coved *d, struct coved_tenant *t, struct MHD_Connection *c,
                        const char *method, const char *url, const char *body, size_t len,
                        enum MHD_Result *ret)
{
	bool events = strcmp(url, "/events") == 0;
	bool list = strcmp(url, "/webhooks") == 0 || strcmp(url, "/webhooks/") == 0;
	const char *id = strncmp(url, "/webhooks/", 10) == 0 && url[10] ? url + 10 : NULL;
	if (!events && !list && !id)
		return false;
	if (!t) {
		*ret = coved_json_error(c, 401, "missing or invalid API key (X-API-KEY)");
	} else if (id && (strlen(id) != COVED_ID_LEN || strchr(id, '/'))) {
		*ret = coved_json_error(c, 404, "no such webhook");
	} else if (events) {
		*ret = strcmp(method, "GET") ? coved_json_error(c, 405,
		                                                "method not allowed on "
		                                                "this path")
		       : len ? coved_json_error(c, 400, "this request takes no body")
		             : events_get(d, t, c);
	} else {
		*ret = hooks(d, t, c, method, id, body, len);
	}
	return true;
}
