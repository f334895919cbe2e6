/* The archives COPY steps read: upload links, spooling, unpacking
 * (build_files.h). */
#include "daemon/sandboxes/build_files.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/conf/keys.h"
#include "daemon/sandboxes/build_req.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"
#include "lib/base/registry.h"

#define UPLOADS_MAX   256 /* upload links handed out and not used yet */
#define UPLOAD_TTL_MS (60 * 60 * 1000)

/* An upload link (E2B's): its token names the tenant's archive hash. */
struct upload_link {
	char token[65];
	char tenant[COVED_TENANT_LEN + 1];
	char hash[COVED_FILES_HASH_LEN + 1];
	int64_t expires_ms;
};

struct coved_uploads {
	pthread_mutex_t mu;
	struct upload_link v[UPLOADS_MAX];
};

int coved_files_init(struct coved *d)
{
	struct coved_uploads *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	pthread_mutex_init(&u->mu, NULL);
	d->uploads = u;
	return 0;
}

void coved_files_dir(const struct coved *d, const char *tenant, const char *hash, char *out,
                     size_t len)
{
	snprintf(out, len, "%s/template-files/%s/%s", d->cfg.state_dir, tenant, hash);
}

bool coved_files_present(const struct coved *d, const char *tenant, const char *hash)
{
	char p[4400];
	struct stat st;
	coved_files_dir(d, tenant, hash, p, sizeof(p));
	return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Appends a then b as one single-quoted shell word (after a space when
 * out holds some already; *n: its length).  False when it does not fit. */
static bool add_word(char *out, size_t len, size_t *n, const char *a, const char *b)
{
	char w[8200];
	snprintf(w, sizeof(w), "%s%s", a, b);
	size_t need = (*n ? 1 : 0) + 2;
	for (const char *p = w; *p; p++)
		need += *p == '\'' ? 4 : 1;
	if (*n + need >= len)
		return false;
	char *o = out + *n;
	if (*n)
		*o++ = ' ';
	*o++ = '\'';
	for (const char *p = w; *p; p++) {
		if (*p == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *p;
		}
	}
	*o++ = '\'';
	*o = 0;
	*n = (size_t)(o - out);
	return true;
}

int coved_files_mode_targets(const char *ctx, const char *src, const char *dest, char *out,
                             size_t len, char *err, size_t errlen)
{
	if (strpbrk(src, "*?["))
		return errf(err, errlen, -EINVAL, "a COPY with a mode takes no glob ('%.200s')",
		            src);
	/* The folder src is in must resolve inside ctx; its last component is
	 * looked at itself (a symlink stays one, as E2B moves it). */
	char path[8400], name[256];
	size_t sl = strlen(src);
	while (sl > 1 && src[sl - 1] == '/')
		sl--;
	snprintf(path, sizeof(path), "%s/%.*s", ctx, (int)sl, src);
	char *slash = strrchr(path, '/');
	snprintf(name, sizeof(name), "%s", slash + 1);
	*slash = 0;
	char *base = realpath(ctx, NULL), *real = base ? realpath(path, NULL) : NULL;
	*slash = '/';
	size_t bl = base ? strlen(base) : 0;
	bool inside = real && !strncmp(real, base, bl) && (real[bl] == 0 || real[bl] == '/');
	struct stat st;
	int r = 0;
	size_t n = 0;
	out[0] = 0;
	if (!inside || lstat(path, &st) < 0) {
		r = errf(err, errlen, -EINVAL, "COPY's src '%.200s' is not in the upload", src);
	} else if (!S_ISDIR(st.st_mode)) {
		size_t dl = strlen(dest);
		if (!add_word(out, len, &n, dest, dl && dest[dl - 1] == '/' ? name : ""))
			r = errf(err, errlen, -EINVAL, "COPY's paths are too long for a mode");
	} else {
		DIR *dir = opendir(path);
		struct dirent *e;
		char under[4200];
		snprintf(under, sizeof(under), "%s%s", dest,
		         dest[0] && dest[strlen(dest) - 1] == '/' ? "" : "/");
		while (dir && r == 0 && (e = readdir(dir)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
			    !add_word(out, len, &n, under, e->d_name))
				r = errf(err, errlen, -EINVAL,
				         "COPY's paths are too long for a mode");
		if (dir)
			closedir(dir);
	}
	free(base);
	free(real);
	return r;
}

int coved_files_spool(const struct coved *d, const char *tenant, char *path, size_t len)
{
	char dir[4300], name[17];
	snprintf(dir, sizeof(dir), "%s/template-files/%s", d->cfg.state_dir, tenant);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (coved_new_name(name, 16) < 0)
		return -EIO;
	name[16] = 0;
	snprintf(path, len, "%s/.up-%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	return fd < 0 ? -errno : fd;
}

/* A path inside the archive: relative, no "." or ".." component, no
 * empty one but a trailing '/', at most COVED_FILES_DEPTH_MAX deep. */
static bool entry_path_ok(const char *p)
{
	if (!*p || *p == '/' || strlen(p) > 4000)
		return false;
	for (int depth = 0; *p; depth++) {
		if (depth == COVED_FILES_DEPTH_MAX)
			return false;
		size_t l = strcspn(p, "/");
		if (l == 0 || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += l;
		if (*p == '/')
			p++;
	}
	return true;
}

/* Copies every entry of a into the folder dir (absolute), each checked. */
static int unpack_to(struct archive *a, const char *dir, uint64_t max, char *err, size_t errlen)
{
	struct archive *w = archive_write_disk_new();
	if (!w)
		return errf(err, errlen, -ENOMEM, "out of memory");
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
	                                      ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	                                      ARCHIVE_EXTRACT_NO_OVERWRITE);
	struct archive_entry *e;
	uint64_t bytes = 0;
	size_t n = 0;
	int r = 0, k;
	while ((k = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		mode_t type = archive_entry_filetype(e);
		char full[8200], p[4100];
		snprintf(p, sizeof(p), "%s", name ? name : ""); /* set_pathname below frees it */
		if (++n > COVED_FILES_ENTRIES_MAX) {
			r = errf(err, errlen, -EINVAL, "the archive has over %d entries",
			         COVED_FILES_ENTRIES_MAX);
			break;
		}
		if (!name || strlen(name) >= sizeof(p) || !entry_path_ok(p) ||
		    archive_entry_hardlink(e) ||
		    (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)) {
			r = errf(
			    err, errlen, -EINVAL,
			    "the archive's entry '%.200s' is not a plain file, folder or symlink "
			    "at a relative path",
			    p);
			break;
		}
		if (archive_entry_size(e) > 0)
			bytes += (uint64_t)archive_entry_size(e);
		if (bytes > max) {
			r = errf(err, errlen, -EFBIG, "the archive unpacks to over %llu bytes",
			         (unsigned long long)max);
			break;
		}
		snprintf(full, sizeof(full), "%s/%s", dir, p);
		archive_entry_set_pathname(e, full);
		archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
		if (archive_write_header(w, e) != ARCHIVE_OK) {
			r = errf(err, errlen, -EINVAL, "'%.200s': %s", p, archive_error_string(w));
			break;
		}
		const void *buf;
		size_t len;
		int64_t off;
		while (type == AE_IFREG &&
		       (k = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
			if (archive_write_data_block(w, buf, len, off) != ARCHIVE_OK) {
				k = ARCHIVE_FATAL;
				break;
			}
		}
		if (type == AE_IFREG && k != ARCHIVE_EOF) {
			r = errf(err, errlen, -EINVAL, "'%.200s': %s", p,
			         archive_error_string(a) ? archive_error_string(a)
			                                 : archive_error_string(w));
			break;
		}
		archive_write_finish_entry(w);
	}
	if (r == 0 && k != ARCHIVE_EOF)
		r = errf(err, errlen, -EINVAL, "not a tar archive: %s", archive_error_string(a));
	if (archive_write_close(w) != ARCHIVE_OK && r == 0)
		r = errf(err, errlen, -EIO, "%s", archive_error_string(w));
	archive_write_free(w);
	return r;
}

int coved_files_unpack(const struct coved *d, const char *tenant, const char *hash,
                       const char *path, uint64_t max, char *err, size_t errlen)
{
	char dir[4400], tmp[4500];
	coved_files_dir(d, tenant, hash, dir, sizeof(dir));
	snprintf(tmp, sizeof(tmp), "%s.part", path);
	if (mkdir(tmp, 0700) < 0) {
		int e = errno;
		unlink(path);
		return errf(err, errlen, -e, "cannot make %s: %s", tmp, strerror(e));
	}
	struct archive *a = archive_read_new();
	int r;
	if (!a) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
	} else {
		archive_read_support_filter_all(a);
		archive_read_support_format_tar(a);
		if (archive_read_open_filename(a, path, 64 * 1024) != ARCHIVE_OK)
			r = errf(err, errlen, -EINVAL, "not a tar archive: %s",
			         archive_error_string(a));
		else
			r = unpack_to(a, tmp, max, err, errlen);
		archive_read_free(a);
	}
	unlink(path);
	/* The first complete upload of a hash stays; a racing one goes. */
	bool moved = r == 0 && rename(tmp, dir) == 0;
	if (r == 0 && !moved && errno != EEXIST && errno != ENOTEMPTY)
		r = errf(err, errlen, -errno, "cannot rename into %s: %s", dir, strerror(errno));
	if (!moved)
		(void)registry_remove_tree(tmp);
	return r;
}

int coved_upload_link(struct coved *d, const char *tenant, const char *hash, char token[65])
{
	struct coved_uploads *us = d->uploads;
	int64_t now = coved_now_ms();
	int r = -ENOSPC;
	pthread_mutex_lock(&us->mu);
	for (size_t i = 0; i < UPLOADS_MAX; i++) {
		struct upload_link *u = &us->v[i];
		if (u->token[0] && u->expires_ms > now)
			continue;
		if (coved_new_token(u->token) < 0) {
			u->token[0] = 0;
			r = -EIO;
			break;
		}
		snprintf(u->tenant, sizeof(u->tenant), "%s", tenant);
		snprintf(u->hash, sizeof(u->hash), "%s", hash);
		u->expires_ms = now + UPLOAD_TTL_MS;
		memcpy(token, u->token, 65);
		r = 0;
		break;
	}
	pthread_mutex_unlock(&us->mu);
	return r;
}

bool coved_upload_take(struct coved *d, const char *token, char *tenant, size_t tlen, char *hash,
                       size_t hlen)
{
	struct coved_uploads *us = d->uploads;
	bool ok = false;
	if (!us || strlen(token) != COVED_TOKEN_LEN)
		return false;
	int64_t now = coved_now_ms();
	pthread_mutex_lock(&us->mu);
	for (size_t i = 0; i < UPLOADS_MAX && !ok; i++) {
		struct upload_link *u = &us->v[i];
		if (!u->token[0] || !coved_secret_eq(token, u->token))
			continue;
		ok = u->expires_ms > now;
		snprintf(tenant, tlen, "%s", u->tenant);
		snprintf(hash, hlen, "%s", u->hash);
		memset(u, 0, sizeof(*u));
	}
	pthread_mutex_unlock(&us->mu);
	return ok;
}
