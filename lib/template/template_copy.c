/* COPY steps (template_copy.h, docs/templates.md "Steps").  A folder's
 * sources are resolved by lib/image/context.c (globs, .dockerignore, no
 * link followed out of it) and read one file at a time through the
 * context's directory fd; an archive (the E2B SDK's upload) is read by
 * libarchive, its names cleaned as a layer's are.  Both land through the
 * agent's own requests, so nothing is ever written on the host. */
#include "lib/template/template_copy.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "errf.h"
#include "lib/agent/agent_client.h"
#include "lib/agent/conn.h"
#include "lib/agent/proc.h"
#include "lib/image/context.h"
#include "lib/image/oci_json.h"
#include "proto.h"

#define CHUNK (256u << 10)

struct copy {
	struct cove_sandbox *sb;
	const char *user; /* the owner, or NULL: root */
	char *err;
	size_t errlen;
};

static int guest_mkdir(struct copy *c, const char *path, uint32_t mode)
{
	json_t *req =
	    json_pack("{s:s, s:i, s:b}", "path", path, "mode", (int)(mode & 07777), "parents", 1);
	if (req && c->user)
		json_object_set_new(req, "user", json_string(c->user));
	return cove_agent_call(c->sb, PROTO_MKDIR, req, NULL, c->err, c->errlen);
}

static int guest_symlink(struct copy *c, const char *path, const char *target)
{
	json_t *req = json_pack("{s:s, s:s}", "path", path, "target", target);
	if (req && c->user)
		json_object_set_new(req, "user", json_string(c->user));
	return cove_agent_call(c->sb, PROTO_SYMLINK, req, NULL, c->err, c->errlen);
}

/* A regular file from a read callback (fd or archive). */
typedef ssize_t (*copy_read_fn)(void *src, void *buf, size_t len);

static int guest_file(struct copy *c, const char *path, uint32_t mode, copy_read_fn rd, void *src)
{
	int fd = cove_agent_connect(c->sb, c->err, c->errlen);
	if (fd < 0)
		return fd;
	json_t *req = json_pack("{s:s, s:i}", "path", path, "mode", (int)(mode & 07777));
	if (req && c->user)
		json_object_set_new(req, "user", json_string(c->user));
	int r = cove_send_json(fd, PROTO_FILE_PUT, req, c->err, c->errlen);
	char *buf = r == 0 ? malloc(CHUNK) : NULL;
	if (r == 0 && !buf)
		r = errf(c->err, c->errlen, -ENOMEM, "out of memory");
	while (r == 0) {
		ssize_t n = rd(src, buf, CHUNK);
		if (n < 0)
			r = errf(c->err, c->errlen, (int)n, "%s: %s", path, strerror((int)-n));
		if (n <= 0)
			break;
		r = cove_put_data(fd, buf, (size_t)n, c->err, c->errlen);
	}
	free(buf);
	if (r < 0) {
		close(fd);
		return r;
	}
	uint64_t size;
	return cove_put_end(fd, &size, c->err, c->errlen);
}

/* Joins dir and rel into out ("dir/rel"; dir alone for ""). */
static int join(char *out, size_t len, const char *dir, const char *rel, char *err, size_t errlen)
{
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	int n = rel[0] ? snprintf(out, len, "%.*s/%s", (int)dl, dir, rel)
	               : snprintf(out, len, "%.*s", (int)dl, dir);
	if (n < 0 || (size_t)n >= len)
		return errf(err, errlen, -ENAMETOOLONG, "'%s/%s' is too long", dir, rel);
	return 0;
}

/* ---- from a context folder ---- */

static ssize_t fd_read(void *src, void *buf, size_t len)
{
	ssize_t n;
	do
		n = read(*(int *)src, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* Whether the guest has a folder at path. */
static bool guest_is_dir(struct copy *c, const char *path)
{
	json_t *reply = NULL;
	char e[256];
	if (cove_agent_call(c->sb, PROTO_STAT, json_pack("{s:s}", "path", path), &reply, e,
	                    sizeof(e)) < 0)
		return false;
	const char *type = json_string_value(json_object_get(reply, "type"));
	bool dir = type && !strcmp(type, "dir");
	json_decref(reply);
	return dir;
}

static int copy_entry(struct copy *c, const struct ctx *x, const struct ctx_entry *e,
                      const char *to)
{
	if (S_ISDIR(e->mode))
		return guest_mkdir(c, to, e->mode);
	if (S_ISLNK(e->mode))
		return guest_symlink(c, to, e->link);
	int fd = openat(x->rootfd, e->src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errf(c->err, c->errlen, -errno, "'%s': %s", e->src, strerror(errno));
	struct stat st;
	int r = fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)
	            ? errf(c->err, c->errlen, -EINVAL, "'%s' changed while it was copied", e->src)
	            : guest_file(c, to, e->mode, fd_read, &fd);
	close(fd);
	return r;
}

static int copy_folder(struct copy *c, const struct cove_template_step *t)
{
	struct ctx x;
	int r = ctx_open(&x, t->local, c->err, c->errlen);
	if (r < 0)
		return r;
	struct ctx_files f = { 0 };
	r = ctx_resolve(&x, (const char *const *)t->srcs, t->nsrcs, false, &f, c->err, c->errlen);
	size_t dl = strlen(t->guest);
	/* One file named alone goes to dest itself, unless dest is a folder
	 * ("dir/", or one the image has): Docker's rule. */
	bool alone = r == 0 && f.matches == 1 && f.n == 1 && S_ISREG(f.v[0].mode) &&
	             !strchr(f.v[0].rel, '/') && t->guest[dl - 1] != '/' &&
	             !guest_is_dir(c, t->guest);
	char to[PATH_MAX], parent[PATH_MAX];
	if (r == 0 && !alone)
		r = guest_mkdir(c, t->guest, 0755);
	if (r == 0 && alone) {
		/* Its folder, as Docker makes it. */
		snprintf(parent, sizeof(parent), "%s", t->guest);
		char *slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = 0;
			const char *u = c->user;
			c->user = NULL;
			r = guest_mkdir(c, parent, 0755);
			c->user = u;
		}
	}
	for (size_t i = 0; r == 0 && i < f.n; i++) {
		if (alone)
			snprintf(to, sizeof(to), "%s", t->guest);
		else if ((r = join(to, sizeof(to), t->guest, f.v[i].rel, c->err, c->errlen)) < 0)
			break;
		r = copy_entry(c, &x, &f.v[i], to);
	}
	ctx_files_free(&f);
	ctx_close(&x);
	return r;
}

/* ---- from an archive ---- */

static ssize_t ar_read(void *src, void *buf, size_t len)
{
	la_ssize_t n = archive_read_data(src, buf, len);
	return n < 0 ? -EIO : (ssize_t)n;
}

static int archive_entry_copy(struct copy *c, struct archive *a, struct archive_entry *e,
                              const char *dest)
{
	const char *raw = archive_entry_pathname(e);
	const char *name = raw ? oci_member_name(raw) : NULL;
	if (!name)
		return errf(c->err, c->errlen, -EINVAL, "archive entry '%.128s': climbs out",
		            raw ? raw : "");
	char to[PATH_MAX];
	int r = join(to, sizeof(to), dest, name, c->err, c->errlen);
	if (r < 0)
		return r;
	mode_t m = archive_entry_mode(e);
	if (S_ISDIR(m))
		return guest_mkdir(c, to, m);
	if (S_ISLNK(m)) {
		const char *target = archive_entry_symlink(e);
		if (!target || !*target)
			return errf(c->err, c->errlen, -EINVAL, "archive entry '%.128s': no target",
			            name);
		return guest_symlink(c, to, target);
	}
	if (!S_ISREG(m) || archive_entry_hardlink(e))
		return errf(c->err, c->errlen, -EINVAL,
		            "archive entry '%.128s': only folders, files and symbolic links", name);
	/* Its folder may come later in the archive, or never. */
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", to);
	*strrchr(parent, '/') = 0;
	if (parent[0] && (r = guest_mkdir(c, parent, 0755)) < 0)
		return r;
	return guest_file(c, to, m, ar_read, a);
}

static int copy_archive(struct copy *c, const struct cove_template_step *t)
{
	struct archive *a = archive_read_new();
	if (!a)
		return errf(c->err, c->errlen, -ENOMEM, "out of memory");
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_bzip2(a);
	archive_read_support_filter_xz(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	int r = guest_mkdir(c, t->guest, 0755);
	if (r == 0 && archive_read_open_filename(a, t->local, CHUNK) != ARCHIVE_OK)
		r = errf(c->err, c->errlen, -EIO, "%s: %s", t->local, archive_error_string(a));
	struct archive_entry *e;
	size_t n = 0;
	while (r == 0) {
		int ar = archive_read_next_header(a, &e);
		if (ar == ARCHIVE_EOF)
			break;
		if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN)
			r = errf(c->err, c->errlen, -EIO, "%s: %s", t->local,
			         archive_error_string(a));
		else if (++n > COPY_ARCHIVE_ENTRIES)
			r = errf(c->err, c->errlen, -E2BIG, "%s: more than %d entries", t->local,
			         COPY_ARCHIVE_ENTRIES);
		else
			r = archive_entry_copy(c, a, e, t->guest);
	}
	archive_read_free(a);
	return r;
}

int template_copy(struct cove_sandbox *sb, const struct cove_template_step *t, char *err,
                  size_t errlen)
{
	struct copy c = { .sb = sb, .user = t->chown, .err = err, .errlen = errlen };
	return t->nsrcs ? copy_folder(&c, t) : copy_archive(&c, t);
}
