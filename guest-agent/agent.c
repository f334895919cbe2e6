/* One host connection: frames in, one request at a time, each handed to
 * its handler (exec.c, files.c, proc.c, or here), replies out. */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ca.h"
#include "conn.h"
#include "defaults.h"
#include "exec.h"
#include "files.h"
#include "fsfreeze.h"
#include "port.h"
#include "proc.h"
#include "proto_json.h"
#include "watch.h"

static int reply_pong(struct agent_conn *c, uint32_t id)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "{\"version\":%d}", PROTO_VERSION);
	return proto_send(c->fd, PROTO_PONG, id, buf, (uint32_t)n);
}

static int do_shutdown(struct agent_conn *c, uint32_t id)
{
	if (!c->cfg || !c->cfg->shutdown)
		return agent_conn_fail(c, id, EPERM, "shutdown is not enabled");
	int r = agent_conn_ok(c, id, NULL);
	if (r == 0)
		c->cfg->shutdown(c->cfg->opaque);
	return r;
}

static int do_restored(struct agent_conn *c, const struct agent_req *req)
{
	if (!c->cfg || !c->cfg->restored)
		return agent_conn_fail(c, req->id, EPERM, "restore notices are not enabled");
	struct agent_restore_result res = { 0 };
	char err[384] = "";
	int r = c->cfg->restored(c->cfg->opaque, &req->u.restored, &res, err, sizeof(err));
	/* The host may send its next request right behind the notice, on
	 * this connection: when the notice failed (or the CRNG is still the
	 * snapshot's), answer and end the connection, so nothing behind it
	 * runs in a guest that is still a copy. */
	if (r < 0) {
		(void)!agent_conn_fail(c, req->id, -r, "%s", err[0] ? err : "restore failed");
		return -EIO;
	}
	json_t *o = json_pack("{s:b, s:I}", "reseeded", (int)res.reseeded, "hwrng_bytes",
	                      (json_int_t)res.hwrng_bytes);
	if (!o) {
		(void)!agent_conn_fail(c, req->id, ENOMEM, "out of memory");
		return -EIO;
	}
	r = agent_conn_ok(c, req->id, o);
	return r < 0 ? r : res.reseeded ? 0 : -EIO;
}

/* PROTO_CA (guest-agent/ca.c): OK {"bundle": B} or ERROR. */
static int do_ca(struct agent_conn *c, const struct agent_req *req)
{
	bool bundle;
	char err[256] = "";
	int r = agent_ca_apply(req->json, &bundle, err, sizeof(err));
	if (r < 0)
		return agent_conn_fail(c, req->id, -r, "CA: %s", err);
	json_t *o = json_pack("{s:b}", "bundle", (int)bundle);
	if (!o)
		return agent_conn_fail(c, req->id, ENOMEM, "out of memory");
	return agent_conn_ok(c, req->id, o);
}

/* PROTO_DEFAULTS: the defaults of later execs (defaults.c). */
static int do_defaults(struct agent_conn *c, const struct agent_req *req)
{
	int r = agent_defaults_set(req->u.defaults.env, req->u.defaults.cwd, req->u.defaults.user);
	if (r < 0)
		return agent_conn_fail(c, req->id, -r, "out of memory");
	return agent_conn_ok(c, req->id, NULL);
}

static int dispatch(struct agent_conn *c, const struct agent_req *req)
{
	switch (req->type) {
	case PROTO_PING:
		return reply_pong(c, req->id);
	case PROTO_EXEC:
		return agent_exec(c, req);
	case PROTO_FILE_PUT:
		return agent_file_put(c, req);
	case PROTO_FILE_GET:
		return agent_file_get(c, req);
	case PROTO_STAT:
		return agent_stat(c, req);
	case PROTO_LIST:
		return agent_list(c, req);
	case PROTO_MKDIR:
		return agent_mkdir(c, req);
	case PROTO_REMOVE:
		return agent_remove(c, req);
	case PROTO_SYNC:
		sync();
		return agent_conn_ok(c, req->id, NULL);
	case PROTO_SHUTDOWN:
		return do_shutdown(c, req->id);
	case PROTO_RESTORED:
		return do_restored(c, req);
	case PROTO_CA:
		return do_ca(c, req);
	case PROTO_DEFAULTS:
		return do_defaults(c, req);
	case PROTO_SYMLINK:
		return agent_symlink(c, req);
	case PROTO_FREEZE:
		return agent_freeze(c, req->id, req->u.freeze.timeout_ms); /* fsfreeze.c */
	case PROTO_THAW:
		return agent_thaw(c, req->id);
	case PROTO_USER:
		return agent_user(c, req);
	case PROTO_WATCH:
		return agent_watch(c, req);
	case PROTO_PORT:
		return agent_port(c, req);
	case PROTO_PROC_START:
	case PROTO_PROC_ATTACH:
	case PROTO_PROC_INPUT:
	case PROTO_PROC_CLOSE_STDIN:
	case PROTO_PROC_SIGNAL:
	case PROTO_PROC_LIST:
	case PROTO_PROC_RESIZE:
	case PROTO_MOVE:
		return agent_proc_request(c, req); /* proc.c */
	case PROTO_STDIN:
	case PROTO_SIGNAL:
	case PROTO_RESIZE:
	case PROTO_ERROR:
		/* Late input for an exec that has just ended (the host had not
		 * seen EXIT yet), or a host-side error note: nothing to do. */
		return 0;
	case PROTO_DATA:
		return agent_conn_reject(c, req->id, EPROTO, "DATA outside a FILE_PUT");
	default:
		return agent_conn_reject(c, req->id, EPROTO, "frame type %u is not a request",
		                         req->type);
	}
}

int agent_serve_conn(int fd, const struct agent_config *cfg)
{
	struct agent_conn c = { .fd = fd, .cfg = cfg };
	proto_reader_init(&c.rd);
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	int r;
	for (;;) {
		struct proto_hdr h;
		uint8_t *payload = NULL;
		r = agent_conn_recv(&c, &h, &payload);
		if (r == -ECONNRESET) {
			r = 0; /* the host is done */
			break;
		}
		if (r == -EPROTO) {
			r = agent_conn_reject(&c, h.id, EPROTO, "unknown frame type %u", h.type);
			break;
		}
		if (r == -EMSGSIZE) {
			r = agent_conn_reject(&c, h.id, EMSGSIZE, "frame payload over %u bytes",
			                      PROTO_MAX_PAYLOAD);
			break;
		}
		if (r < 0)
			break;
		struct agent_req req;
		char err[256];
		r = agent_req_parse(&h, payload, &req, err, sizeof(err));
		if (r == -EPROTO)
			r = agent_conn_reject(&c, h.id, EPROTO, "%s", err);
		else if (r < 0)
			r = agent_conn_reject(&c, h.id, -r, "cannot parse the request");
		else
			r = dispatch(&c, &req);
		agent_req_free(&req);
		free(payload);
		if (r < 0)
			break;
	}
	proto_reader_reset(&c.rd);
	/* Let an ERROR already sent reach the host before the close. */
	shutdown(fd, SHUT_WR);
	return r;
}
