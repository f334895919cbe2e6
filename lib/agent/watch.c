/* Directory watches: PROTO_WATCH, then its WATCH_EVENT frames. */
#include "lib/agent/watch.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/agent/agent_client.h"
#include "lib/agent/conn.h"
#include "proto.h"

static const char *const kinds[] = { "", "create", "write", "remove", "rename", "chmod" };

const char *cove_watch_kind_name(enum cove_watch_kind k)
{
	return (unsigned)k < sizeof(kinds) / sizeof(kinds[0]) ? kinds[k] : "";
}

int cove_watch_on(int fd, const char *path, bool recursive, char *err, size_t errlen)
{
	if (!path || path[0] != '/' || strnlen(path, PATH_MAX) >= PATH_MAX)
		return errf(err, errlen, -EINVAL, "a watched folder must be an absolute path");
	json_t *req = json_pack("{s:s, s:b}", "path", path, "recursive", (int)recursive);
	if (!req)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = cove_send_json(fd, PROTO_WATCH, req, err, errlen);
	if (r == 0)
		r = cove_expect(fd, PROTO_OK, NULL, NULL, err, errlen);
	return r;
}

int cove_watch_begin(struct cove_sandbox *sb, const char *path, bool recursive, char *err,
                     size_t errlen)
{
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	int r = cove_watch_on(fd, path, recursive, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int cove_watch_event_parse(const uint8_t *payload, size_t len, struct cove_watch_event *ev,
                           char *err, size_t errlen)
{
	memset(ev, 0, sizeof(*ev));
	json_t *o = payload && len ? json_loadb((const char *)payload, len, 0, NULL) : NULL;
	json_t *n = json_object_get(o, "name"), *t = json_object_get(o, "type");
	const char *name = json_string_value(n), *type = json_string_value(t);
	int r = -EPROTO;
	if (!name || !name[0] || name[0] == '/' || json_string_length(n) != strlen(name) ||
	    strlen(name) >= PATH_MAX) {
		r = errf(err, errlen, -EPROTO, "the agent's watch event has no usable name");
		goto out;
	}
	for (size_t k = 1; type && k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (!strcmp(type, kinds[k]))
			ev->kind = (enum cove_watch_kind)k;
	if (!ev->kind) {
		r = errf(err, errlen, -EPROTO, "the agent's watch event has no known type");
		goto out;
	}
	ev->name = strdup(name);
	r = ev->name ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
	if (r < 0)
		ev->kind = COVE_WATCH_IDLE;
out:
	json_decref(o);
	return r;
}

int cove_watch_next(int fd, int wait_ms, struct cove_watch_event *ev, char *err, size_t errlen)
{
	memset(ev, 0, sizeof(*ev));
	struct proto_hdr h;
	uint8_t *payload;
	int r = agent_frame_next(fd, wait_ms, &h, &payload, err, errlen);
	if (r <= 0)
		return r; /* 0: COVE_WATCH_IDLE */
	r = 0;
	switch (h.type) {
	case PROTO_WATCH_EVENT:
		r = cove_watch_event_parse(payload, h.len, ev, err, errlen);
		break;
	case PROTO_PONG:
		break; /* COVE_WATCH_IDLE */
	case PROTO_ERROR:
		r = cove_error_frame(payload, err, errlen);
		break;
	default:
		r = errf(err, errlen, -EPROTO, "unexpected frame type %u during a watch", h.type);
		break;
	}
	free(payload);
	return r;
}

void cove_watch_event_free(struct cove_watch_event *ev)
{
	free(ev->name);
	ev->name = NULL;
	ev->kind = COVE_WATCH_IDLE;
}
