/* Layers applied into an ext4w image; see layer.h.  Entries go in tar
 * order; every path is normalized (layer_path.c) and resolved by ext4w,
 * which never follows a symbolic link, so a layer cannot reach past the
 * image's root, let alone the host's file system. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errf.h"
#include "lib/image/layer.h"
#include "lib/image/layer_path.h"

#define WH      ".wh."
#define WH_OPQ  ".wh..wh..opq"
#define WH_AUFS ".wh..wh."

/* The root's lost+found belongs to the file system (e2fsck wants it):
 * layers neither remove nor replace it. */
#define LOST_FOUND "lost+found"

/* How much of an entry's name a message shows. */
#define NAME_SHOWN 160

struct apply {
	struct ext4w *w;
	struct archive *ar;
	unsigned int index;
	struct layer_opts *o;
	uint64_t max;
	uint64_t disk;            /* the image's size in bytes */
	struct pathset added;     /* what this layer wrote */
	struct pathset under;     /* the directories above it */
	char raw[NAME_SHOWN + 4]; /* the entry's name as the tar has it, cut */
	char path[PATH_MAX];      /* its normalized path; a work buffer */
	char *err;
	size_t errlen;
};

/* Refuses the current entry: "layer N: entry 'NAME': WHY". */
__attribute__((format(printf, 3, 4))) static int refuse(struct apply *a, int code, const char *fmt,
                                                        ...)
{
	char why[640];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return errf(a->err, a->errlen, code, "layer %u: entry '%s': %s", a->index, a->raw, why);
}

/* An ext4w line about path without its "'path': " (the entry is named
 * already). */
static const char *about(const char *why, const char *path)
{
	size_t n = strlen(path);
	if (why[0] == '\'' && !strncmp(why + 1, path, n) && !strncmp(why + 1 + n, "': ", 3))
		return why + n + 4;
	return why;
}

static void set_raw(struct apply *a, const char *name)
{
	size_t n = strnlen(name, NAME_SHOWN + 1);
	if (n > NAME_SHOWN) {
		memcpy(a->raw, name, NAME_SHOWN);
		memcpy(a->raw + NAME_SHOWN, "...", 4);
	} else {
		memcpy(a->raw, name, n + 1);
	}
}

static const char *entry_name(struct archive_entry *e)
{
	const char *s = archive_entry_pathname(e);
	return s ? s : archive_entry_pathname_utf8(e);
}

static int mark(struct apply *a, const char *path)
{
	char up[PATH_MAX];
	int rc = pathset_add(&a->added, path);
	snprintf(up, sizeof(up), "%s", path);
	for (char *s = strrchr(up, '/'); !rc && s; s = strrchr(up, '/')) {
		*s = 0;
		if (pathset_has(&a->under, up))
			break; /* and so are the ones above it */
		rc = pathset_add(&a->under, up);
	}
	if (rc == -E2BIG)
		return refuse(a, rc, "the layer's names pass %u MiB", LAYER_PATHSET_MAX >> 20);
	return rc ? refuse(a, rc, "out of memory") : 0;
}

/* ---- attributes ----------------------------------------------------------- */

static int get_attr(struct apply *a, struct archive_entry *e, struct ext4w_attr *at)
{
	la_int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);
	if (uid < 0 || uid >= UINT32_MAX || gid < 0 || gid >= UINT32_MAX)
		return refuse(a, -EINVAL, "owner %lld:%lld out of range", (long long)uid,
		              (long long)gid);
	long ns = archive_entry_mtime_nsec(e);
	*at = (struct ext4w_attr){
		.mode = archive_entry_filetype(e) | (archive_entry_perm(e) & 07777),
		.uid = (uint32_t)uid,
		.gid = (uint32_t)gid,
		.mtime = archive_entry_mtime_is_set(e) ? (int64_t)archive_entry_mtime(e) : 0,
		.mtime_nsec = ns > 0 && ns < 1000000000 ? (uint32_t)ns : 0,
	};
	return 0;
}

static int set_xattrs(struct apply *a, struct archive_entry *e, const char *path)
{
	const char *name;
	const void *val;
	size_t size;
	char why[512];

	if (archive_entry_xattr_reset(e) > LAYER_MAX_XATTRS)
		return refuse(a, -E2BIG, "more than %d xattrs", LAYER_MAX_XATTRS);
	while (archive_entry_xattr_next(e, &name, &val, &size) == ARCHIVE_OK) {
		int rc = ext4w_set_xattr(a->w, path, name, val, size, why, sizeof(why));
		if (rc)
			return refuse(a, rc, "%s", about(why, path));
	}
	return 0;
}

/* ---- places --------------------------------------------------------------- */

/* 0 for a directory, else -ELOOP or -ENOTDIR with a line naming path. */
static int must_be_dir(const char *path, uint32_t mode, char *why, size_t wlen)
{
	if (S_ISDIR(mode))
		return 0;
	if (S_ISLNK(mode))
		return errf(why, wlen, -ELOOP, "'%s' is a symbolic link", path);
	return errf(why, wlen, -ENOTDIR, "'%s' is not a directory", path);
}

/* Makes the parent directories of a->path that are missing; refuses a
 * parent path that crosses a symbolic link or a non-directory. */
static int parents(struct apply *a)
{
	char *slash = strrchr(a->path, '/');
	struct ext4w_stat st;
	char why[512];

	if (!slash)
		return 0;
	*slash = 0;
	int rc = ext4w_lookup(a->w, a->path, &st, why, sizeof(why));
	if (!rc)
		rc = must_be_dir(a->path, st.mode, why, sizeof(why));
	for (char *p = a->path; rc == -ENOENT; p++) { /* make each missing one */
		char *end = strchr(p, '/');
		if (end)
			*end = 0;
		rc = ext4w_lookup(a->w, a->path, &st, why, sizeof(why));
		if (rc == -ENOENT) {
			const struct ext4w_attr dir = { .mode = S_IFDIR | 0755 };
			rc = ext4w_mkdir(a->w, a->path, &dir, why, sizeof(why));
			if (!rc)
				rc = mark(a, a->path);
		} else if (!rc) {
			rc = must_be_dir(a->path, st.mode, why, sizeof(why));
		}
		if (!end)
			break;
		*end = '/';
		p = end;
		if (!rc)
			rc = -ENOENT; /* on to the next component */
	}
	*slash = '/';
	return rc ? refuse(a, rc, "%s", why) : 0;
}

/* Clears the place of a new entry at a->path: returns 1 when a directory
 * is there and the new entry is one too (they merge), else removes what
 * is there and returns 0. */
static int make_room(struct apply *a, int is_dir)
{
	struct ext4w_stat st;
	char why[512];

	int rc = ext4w_lookup(a->w, a->path, &st, why, sizeof(why));
	if (rc == -ENOENT)
		return 0;
	if (!rc && is_dir && S_ISDIR(st.mode))
		return 1;
	if (!rc && !strcmp(a->path, LOST_FOUND))
		return refuse(a, -EPERM, "only a directory may take the place of /" LOST_FOUND);
	if (!rc)
		rc = ext4w_remove(a->w, a->path, why, sizeof(why));
	return rc ? refuse(a, rc, "%s", about(why, a->path)) : 0;
}

/* ---- whiteouts ------------------------------------------------------------ */

struct names {
	char **v;
	size_t n, cap;
};

static int names_cb(void *ctx, const char *name, uint32_t ino, uint32_t type)
{
	struct names *l = ctx;
	(void)ino, (void)type;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		char **v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = strdup(name);
	return l->v[l->n++] ? 0 : -ENOMEM;
}

static void names_free(struct names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* Empties the directory at a->path (len bytes) of what layers before put
 * there, keeping what this layer wrote (and, in its directories, going
 * on below).  Returns 0 or -errno with a line in why. */
static int opaque_dir(struct apply *a, size_t len, char *why, size_t wlen)
{
	struct names l = { .v = NULL };

	int rc = ext4w_list(a->w, a->path, names_cb, &l, why, wlen);
	if (rc == -ENOMEM)
		errf(why, wlen, rc, "out of memory");
	for (size_t i = 0; !rc && i < l.n; i++) {
		size_t n = strlen(l.v[i]), at = len ? len + 1 : 0;
		if (at + n >= sizeof(a->path)) {
			rc = errf(why, wlen, -ENAMETOOLONG, "a path longer than PATH_MAX");
			break;
		}
		if (len)
			a->path[len] = '/';
		memcpy(a->path + at, l.v[i], n + 1);
		struct ext4w_stat st;
		if (!len && !strcmp(a->path, LOST_FOUND)) {
			rc = 0;
		} else if (!pathset_has(&a->added, a->path)) {
			rc = ext4w_remove(a->w, a->path, why, wlen);
		} else {
			rc = ext4w_lookup(a->w, a->path, &st, why, wlen);
			if (!rc && S_ISDIR(st.mode))
				rc = opaque_dir(a, at + n, why, wlen);
		}
		a->path[len] = 0;
	}
	names_free(&l);
	a->path[len] = 0;
	return rc;
}

static int whiteout(struct apply *a, char *base)
{
	struct ext4w_stat st;
	char why[512];
	size_t dlen = base == a->path ? 0 : (size_t)(base - a->path) - 1;

	if (!strcmp(base, WH_OPQ)) {
		a->path[dlen] = 0;
		int rc = ext4w_lookup(a->w, a->path, &st, why, sizeof(why));
		if (rc == -ENOENT || (!rc && !S_ISDIR(st.mode)))
			return 0;
		if (!rc)
			rc = opaque_dir(a, dlen, why, sizeof(why));
		return rc ? refuse(a, rc, "%s", why) : 0;
	}
	if (!strncmp(base, WH_AUFS, strlen(WH_AUFS)))
		return 0;
	const char *name = base + strlen(WH);
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return refuse(a, -EINVAL, "a whiteout of no name");
	memmove(base, name, strlen(name) + 1);
	if (pathset_has(&a->added, a->path) || !strcmp(a->path, LOST_FOUND))
		return 0; /* this layer's own entry: only a later layer hides it */
	int rc = ext4w_lookup(a->w, a->path, &st, why, sizeof(why));
	if (rc == -ENOENT)
		return 0;
	if (!rc && pathset_has(&a->under, a->path)) /* keep what this layer put below */
		rc = S_ISDIR(st.mode) ? opaque_dir(a, strlen(a->path), why, sizeof(why)) : 0;
	else if (!rc)
		rc = ext4w_remove(a->w, a->path, why, sizeof(why));
	return rc ? refuse(a, rc, "%s", about(why, a->path)) : 0;
}

/* ---- entries -------------------------------------------------------------- */

static int read_data(void *ctx, const void **data, size_t *len, uint64_t *off, char *err,
                     size_t errlen)
{
	struct apply *a = ctx;
	la_int64_t o = 0;
	int r = archive_read_data_block(a->ar, data, len, &o);
	if (r == ARCHIVE_EOF)
		return 0;
	if (r < ARCHIVE_WARN)
		return errf(err, errlen, -EIO, "%s", archive_error_string(a->ar));
	if (o < 0)
		return errf(err, errlen, -EINVAL, "data at a negative offset");
	*off = (uint64_t)o;
	return 1;
}

static int hard_link(struct apply *a, const char *to)
{
	char target[PATH_MAX], why[512];
	const char *bad;
	struct ext4w_stat st;

	if (layer_norm(to, target, &bad))
		return refuse(a, -EINVAL, "hard link target: %s", bad);
	if (!target[0] || !strcmp(target, a->path))
		return refuse(a, -EINVAL, "a hard link to %s", target[0] ? "itself" : "the root");
	int rc = ext4w_lookup(a->w, target, &st, why, sizeof(why));
	if (rc)
		return refuse(a, rc, "hard link target: %s", why);
	if (S_ISDIR(st.mode))
		return refuse(a, -EPERM, "a hard link to the directory '%s'", target);
	rc = parents(a);
	if (!rc)
		rc = make_room(a, 0);
	if (rc)
		return rc;
	rc = ext4w_link(a->w, a->path, target, why, sizeof(why));
	return rc ? refuse(a, rc, "%s", about(why, a->path)) : mark(a, a->path);
}

/* Makes the entry e at a->path (its parents exist, its place is free or
 * a directory that merge says it may merge with). */
static int make(struct apply *a, struct archive_entry *e, const struct ext4w_attr *at, int merge)
{
	char why[512];
	int rc;

	switch (at->mode & S_IFMT) {
	case S_IFDIR:
		rc = merge ? ext4w_set_attr(a->w, a->path, at, why, sizeof(why))
		           : ext4w_mkdir(a->w, a->path, at, why, sizeof(why));
		break;
	case S_IFREG:
		rc = ext4w_write(a->w, a->path, at, (uint64_t)archive_entry_size(e), read_data, a,
		                 why, sizeof(why));
		break;
	case S_IFLNK: {
		const char *t = archive_entry_symlink(e);
		t = t ? t : archive_entry_symlink_utf8(e);
		if (!t || !*t)
			return refuse(a, -EINVAL, "a symbolic link to nothing");
		rc = ext4w_symlink(a->w, a->path, t, at, why, sizeof(why));
		break;
	}
	case S_IFCHR:
	case S_IFBLK:
	case S_IFIFO:
	case S_IFSOCK:
		rc = ext4w_mknod(a->w, a->path, at, (uint32_t)archive_entry_rdevmajor(e),
		                 (uint32_t)archive_entry_rdevminor(e), why, sizeof(why));
		break;
	default:
		return refuse(a, -EINVAL, "an entry of unknown type %o", at->mode & S_IFMT);
	}
	return rc ? refuse(a, rc, "%s", about(why, a->path)) : 0;
}

static int entry(struct apply *a, struct archive_entry *e)
{
	struct ext4w_attr at;
	const char *why, *name = entry_name(e);

	set_raw(a, name ? name : "?");
	if (!name)
		return refuse(a, -EINVAL, "a name that cannot be read");
	if (++a->o->entries > a->max)
		return refuse(a, -E2BIG, "more than %llu entries in the image",
		              (unsigned long long)a->max);
	if (layer_norm(name, a->path, &why))
		return refuse(a, -EINVAL, "%s", why);
	char *base = strrchr(a->path, '/');
	base = base ? base + 1 : a->path;
	if (!strncmp(base, WH, strlen(WH)))
		return whiteout(a, base);
	const char *hl = archive_entry_hardlink(e);
	if (hl || archive_entry_hardlink_utf8(e))
		return hard_link(a, hl ? hl : archive_entry_hardlink_utf8(e));
	int rc = get_attr(a, e, &at);
	if (rc)
		return rc;
	if (!a->path[0]) { /* "./": the root's own attributes */
		if (!S_ISDIR(at.mode))
			return refuse(a, -EINVAL, "the root is not a directory");
		char msg[512];
		rc = ext4w_set_attr(a->w, "", &at, msg, sizeof(msg));
		return rc ? refuse(a, rc, "%s", msg) : set_xattrs(a, e, "");
	}
	if (S_ISREG(at.mode) && (uint64_t)archive_entry_size(e) > a->disk)
		return refuse(a, -EFBIG, "%lld bytes is larger than the disk (%llu)",
		              (long long)archive_entry_size(e), (unsigned long long)a->disk);
	rc = parents(a);
	int merge = rc ? 0 : make_room(a, S_ISDIR(at.mode));
	if (rc || merge < 0)
		return rc ? rc : merge;
	rc = make(a, e, &at, merge);
	if (!rc)
		rc = set_xattrs(a, e, a->path);
	return rc ? rc : mark(a, a->path);
}

/* ---- archives ------------------------------------------------------------- */

/* A reader of tar (ustar, pax, GNU) through gzip, zstd or no filter,
 * with every filter built into libarchive (none run as a program). */
static struct archive *reader(unsigned int index, char *err, size_t errlen)
{
	struct archive *ar = archive_read_new();
	if (!ar) {
		errf(err, errlen, -ENOMEM, "layer %u: out of memory", index);
		return NULL;
	}
	if (archive_read_support_format_tar(ar) != ARCHIVE_OK ||
	    archive_read_support_format_empty(ar) != ARCHIVE_OK ||
	    archive_read_support_filter_gzip(ar) != ARCHIVE_OK ||
	    archive_read_support_filter_zstd(ar) != ARCHIVE_OK) {
		errf(err, errlen, -ENOTSUP, "layer %u: libarchive lacks gzip or zstd: %s", index,
		     archive_error_string(ar));
		archive_read_free(ar);
		return NULL;
	}
	return ar;
}

/* A libarchive failure: "layer N: WHAT (after entry 'X')". */
static int broken(struct archive *ar, unsigned int index, const char *last, char *err,
                  size_t errlen)
{
	const char *s = archive_error_string(ar);
	return errf(err, errlen, -EIO, "layer %u: %s (%s%s%s)", index, s ? s : "unreadable",
	            last[0] ? "after entry '" : "at its start", last, last[0] ? "'" : "");
}

static int apply(struct ext4w *w, unsigned int index, struct archive *ar, int open_rc,
                 struct layer_opts *o, char *err, size_t errlen)
{
	struct layer_opts none = { 0 };
	struct ext4w_info info;
	if (!o)
		o = &none;
	struct apply a = {
		.w = w,
		.ar = ar,
		.index = index,
		.o = o,
		.err = err,
		.errlen = errlen,
		.max = o->max_entries ? o->max_entries : LAYER_MAX_ENTRIES,
	};
	int rc = open_rc == ARCHIVE_OK ? 0 : broken(ar, index, "", err, errlen);

	ext4w_info(w, &info);
	a.disk = info.blocks * info.block_size;
	while (!rc) {
		struct archive_entry *e;
		int r = archive_read_next_header(ar, &e);
		if (r == ARCHIVE_EOF)
			break;
		rc = r < ARCHIVE_WARN ? broken(ar, index, a.raw, err, errlen) : entry(&a, e);
	}
	pathset_free(&a.added);
	pathset_free(&a.under);
	archive_read_free(ar);
	return rc;
}

int layer_apply_file(struct ext4w *w, unsigned int index, const char *path, struct layer_opts *o,
                     char *err, size_t errlen)
{
	struct archive *ar = reader(index, err, errlen);
	if (!ar)
		return -ENOMEM;
	return apply(w, index, ar, archive_read_open_filename(ar, path, 1 << 16), o, err, errlen);
}

int layer_apply_mem(struct ext4w *w, unsigned int index, const void *data, size_t len,
                    struct layer_opts *o, char *err, size_t errlen)
{
	struct archive *ar = reader(index, err, errlen);
	if (!ar)
		return -ENOMEM;
	return apply(w, index, ar, archive_read_open_memory(ar, data, len), o, err, errlen);
}

/* ---- sizing --------------------------------------------------------------- */

#define BLK 4096u

static uint64_t blocks_of(uint64_t off, uint64_t len)
{
	return len ? (off + len + BLK - 1) / BLK - off / BLK : 0;
}

/* Blocks the contents of a regular entry take: its data, holes left out. */
static uint64_t data_blocks(struct archive_entry *e)
{
	la_int64_t off, len;
	uint64_t n = 0;
	la_int64_t size = archive_entry_size(e);

	if (archive_entry_sparse_reset(e) == 0)
		return size > 0 ? blocks_of(0, (uint64_t)size) : 0;
	while (archive_entry_sparse_next(e, &off, &len) == ARCHIVE_OK)
		if (off >= 0 && len > 0)
			n += blocks_of((uint64_t)off, (uint64_t)len);
	return n;
}

/* Blocks one entry takes beyond its inode; *dirent: its name's bytes in
 * its directory. */
static uint64_t entry_blocks(struct archive_entry *e, const char *base, uint64_t *dirent)
{
	const char *name, *t;
	const void *val;
	size_t size, xattr = 0;
	uint64_t n = 0;

	*dirent = 8 + ((strlen(base) + 3) & ~(size_t)3);
	if (archive_entry_hardlink(e) || archive_entry_hardlink_utf8(e))
		return 0;
	switch (archive_entry_filetype(e)) {
	case AE_IFREG:
		n = data_blocks(e);
		break;
	case AE_IFDIR:
		n = 1;
		break;
	case AE_IFLNK:
		t = archive_entry_symlink(e);
		n = t && strlen(t) >= 60; /* past the inode's 60 bytes */
		break;
	}
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &name, &val, &size) == ARCHIVE_OK)
		xattr += 16 + strlen(name) + size;
	return n + (xattr > 80); /* past the room in a 256-byte inode */
}

static int measure(struct archive *ar, unsigned int index, int open_rc, const struct layer_opts *o,
                   struct layer_size *s, char *err, size_t errlen)
{
	uint64_t max = o && o->max_entries ? o->max_entries : LAYER_MAX_ENTRIES;
	uint64_t dirent = 0, blocks = 0;
	char last[NAME_SHOWN + 4] = "", path[PATH_MAX];
	const char *why;
	int rc = open_rc == ARCHIVE_OK ? 0 : broken(ar, index, "", err, errlen);

	while (!rc) {
		struct archive_entry *e;
		int r = archive_read_next_header(ar, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			rc = broken(ar, index, last, err, errlen);
			break;
		}
		const char *name = entry_name(e);
		snprintf(last, sizeof(last), "%.*s", NAME_SHOWN, name ? name : "?");
		if (++s->entries > max) {
			rc = errf(err, errlen, -E2BIG,
			          "layer %u: entry '%s': more than %llu entries", index, last,
			          (unsigned long long)max);
			break;
		}
		if (!name || layer_norm(name, path, &why))
			continue; /* applying refuses it */
		const char *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		uint64_t d = 0;
		if (strncmp(base, WH, strlen(WH))) {
			blocks += entry_blocks(e, base, &d);
			dirent += d;
		}
	}
	/* a quarter more: names do not cross blocks, blocks are not full */
	s->blocks += blocks + (dirent + dirent / 4 + BLK - 1) / BLK;
	archive_read_free(ar);
	return rc;
}

int layer_measure_file(const char *path, unsigned int index, const struct layer_opts *o,
                       struct layer_size *s, char *err, size_t errlen)
{
	struct archive *ar = reader(index, err, errlen);
	if (!ar)
		return -ENOMEM;
	return measure(ar, index, archive_read_open_filename(ar, path, 1 << 16), o, s, err, errlen);
}

int layer_measure_mem(const void *data, size_t len, unsigned int index, const struct layer_opts *o,
                      struct layer_size *s, char *err, size_t errlen)
{
	struct archive *ar = reader(index, err, errlen);
	if (!ar)
		return -ENOMEM;
	return measure(ar, index, archive_read_open_memory(ar, data, len), o, s, err, errlen);
}

/* mke2fs's journal for a file system of n 4 KiB blocks
 * (ext2fs_default_journal_size). */
static uint64_t journal_blocks(uint64_t n)
{
	static const struct {
		uint64_t below, size;
	} t[] = { { 2048, 0 },
		  { 32768, 1024 },
		  { 256 * 1024, 4096 },
		  { 512 * 1024, 8192 },
		  { 4096 * 1024, 16384 },
		  { 8192 * 1024, 32768 },
		  { 16384 * 1024, 65536 },
		  { 32768 * 1024, 131072 } };
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (n < t[i].below)
			return t[i].size;
	return 262144;
}

void layer_image_size(const struct layer_size *s, uint64_t headroom, uint64_t *bytes,
                      uint64_t *inodes)
{
	uint64_t ino = s->entries + s->entries / 4 + 1024;
	uint64_t data = s->blocks * BLK + headroom;
	/* inode tables; bitmaps, descriptors, extent blocks; superblock
	 * copies, the resize inode's reserve, the root and lost+found */
	uint64_t total = data + ino * 256 + data / 64 + (4u << 20);
	uint64_t j = journal_blocks(total / BLK);
	j = journal_blocks(total / BLK + j);
	total += j * BLK;
	total = (total + (1u << 20) - 1) & ~(uint64_t)((1u << 20) - 1);
	*bytes = total;
	*inodes = ino;
}
