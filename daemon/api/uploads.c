/* COPY archives uploaded to coved, streamed to a spool file (uploads.h). */
#include "daemon/api/uploads.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/conf/keys.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/build_files.h"
#include "daemon/sandboxes/build_req.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "io.h"

#define BY_TOKEN "/templates/uploads/"
#define BY_HASH  "/templates/files/"

struct upload {
	int fd;
	int status; /* an answer decided early (0: none yet) */
	char msg[300];
	uint64_t bytes;
	char path[4400];
	char tenant[COVED_TENANT_LEN + 1];
	char hash[COVED_FILES_HASH_LEN + 1];
};

bool coved_upload_route(const char *method, const char *url, bool *open)
{
	*open = strncmp(url, BY_TOKEN, strlen(BY_TOKEN)) == 0;
	return strcmp(method, "PUT") == 0 && (*open || strncmp(url, BY_HASH, strlen(BY_HASH)) == 0);
}

static bool hash_ok(const char *s)
{
	return strlen(s) == COVED_FILES_HASH_LEN &&
	       strspn(s, "0123456789abcdef") == COVED_FILES_HASH_LEN;
}

/* The first call: whose archive, and its spool file. */
static struct upload *begin(struct coved *d, struct coved_tenant *t, const char *url)
{
	struct upload *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->fd = -1;
	if (strncmp(url, BY_TOKEN, strlen(BY_TOKEN)) == 0) {
		if (!coved_upload_take(d, url + strlen(BY_TOKEN), u->tenant, sizeof(u->tenant),
		                       u->hash, sizeof(u->hash))) {
			u->status = 404;
			snprintf(u->msg, sizeof(u->msg), "no such upload link (or it expired)");
			return u;
		}
	} else {
		const char *h = url + strlen(BY_HASH);
		if (!t || !hash_ok(h)) {
			u->status = t ? 400 : 401;
			snprintf(u->msg, sizeof(u->msg), "%s",
			         t ? "the files hash must be 64 of [0-9a-f]"
			           : "missing or invalid API key (X-API-KEY)");
			return u;
		}
		snprintf(u->tenant, sizeof(u->tenant), "%s", t->name);
		snprintf(u->hash, sizeof(u->hash), "%s", h);
	}
	if (!d->cfg.max_builds || !d->cfg.templates_dir) {
		u->status = 403;
		snprintf(u->msg, sizeof(u->msg), "this coved builds no templates");
		return u;
	}
	u->fd = coved_files_spool(d, u->tenant, u->path, sizeof(u->path));
	if (u->fd < 0) {
		u->status = 500;
		snprintf(u->msg, sizeof(u->msg), "cannot spool the upload: %s", strerror(-u->fd));
	}
	return u;
}

/* Writes a piece; false when the connection should be dropped (a body
 * that goes on far past an answer already decided). */
static bool feed(struct coved *d, struct upload *u, const char *data, size_t n)
{
	if (u->status) { /* decided: the rest is read and dropped, up to a bound */
		u->bytes += n;
		return u->bytes <= d->cfg.max_upload + (1u << 20);
	}
	if (n > d->cfg.max_upload - u->bytes) {
		u->status = 413;
		snprintf(u->msg, sizeof(u->msg),
		         "the archive is over %llu bytes (max_upload_bytes)",
		         (unsigned long long)d->cfg.max_upload);
		u->bytes += n;
		return true;
	}
	int w = write_all(u->fd, data, n);
	if (w < 0) {
		u->status = 500;
		snprintf(u->msg, sizeof(u->msg), "cannot spool the upload: %s", strerror(-w));
	}
	u->bytes += n;
	return true;
}

enum MHD_Result coved_upload_handle(struct coved *d, struct coved_tenant *t,
                                    struct MHD_Connection *c, const char *url, const char *data,
                                    size_t *size, void **cls)
{
	struct upload *u = *cls;
	if (!u) {
		*cls = u = begin(d, t, url);
		if (u && u->status) /* refused before the body: it is not read */
			return coved_json_error(c, (unsigned)u->status, u->msg);
		return u ? MHD_YES : MHD_NO;
	}
	if (*size) {
		bool go = feed(d, u, data, *size);
		*size = 0;
		return go ? MHD_YES : MHD_NO;
	}
	if (!u->status) {
		close(u->fd);
		u->fd = -1;
		char err[600];
		int r = coved_files_unpack(d, u->tenant, u->hash, u->path, d->cfg.max_upload * 4,
		                           err, sizeof(err));
		u->path[0] = 0; /* unpack removed it */
		if (r < 0) {
			u->status = r == -EINVAL || r == -EFBIG ? 400 : 500;
			snprintf(u->msg, sizeof(u->msg), "%.290s", err);
		}
	}
	if (u->status)
		return coved_json_error(c, (unsigned)u->status, u->msg);
	return coved_json_reply(c, 201, json_pack("{s:b}", "present", 1));
}

void coved_upload_done(void **cls)
{
	struct upload *u = *cls;
	if (!u)
		return;
	if (u->fd >= 0)
		close(u->fd);
	if (u->path[0])
		unlink(u->path);
	free(u);
	*cls = NULL;
}
