/* ext4_tar IMAGE.ext4 OUT.tar: the tree of an ext4 image as one tar (pax),
 * read through libext2fs without mounting and without root: owners,
 * modes (setuid and all), mtimes, symlinks, hard links, device nodes,
 * fifos and xattrs as the image has them; names relative to its root, in
 * sorted order, /lost+found left out.  The image tests make a container
 * image layer of the project's Debian rootfs with it (images_lib.sh). */
#include <archive.h>
#include <archive_entry.h>
#include <et/com_err.h>
#include <ext2fs/ext2fs.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Hard links: the first path written for each inode of several links. */
struct seen {
	ext2_ino_t ino;
	char *path;
};

struct exporter {
	ext2_filsys fs;
	struct archive *a;
	struct archive_entry *e;
	struct seen *seen;
	size_t nseen, capseen;
	unsigned long entries;
};

struct name {
	char *s;
	ext2_ino_t ino;
};

struct names {
	struct name *v;
	size_t n, cap;
};

static int fail(const char *what, const char *path, long code)
{
	fprintf(stderr, "ext4_tar: %s '%s': %s\n", what, path,
	        code ? error_message(code) : "failed");
	return -1;
}

static int collect(ext2_ino_t dir, int entry, struct ext2_dir_entry *d, int offset, int blocksize,
                   char *buf, void *priv)
{
	(void)dir, (void)entry, (void)offset, (void)blocksize, (void)buf;
	struct names *ns = priv;
	int len = ext2fs_dirent_name_len(d);
	if ((len == 1 && d->name[0] == '.') || (len == 2 && !memcmp(d->name, "..", 2)))
		return 0;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 64;
		struct name *v = realloc(ns->v, cap * sizeof(*v));
		if (!v)
			return DIRENT_ABORT;
		ns->v = v, ns->cap = cap;
	}
	ns->v[ns->n].s = strndup(d->name, (size_t)len);
	ns->v[ns->n].ino = d->inode;
	if (!ns->v[ns->n].s)
		return DIRENT_ABORT;
	ns->n++;
	return 0;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(((const struct name *)x)->s, ((const struct name *)y)->s);
}

static int add_xattr(char *name, char *value, size_t len, void *data)
{
	/* system.data holds inline file data, not an attribute. */
	if (strcmp(name, "system.data"))
		archive_entry_xattr_add_entry(data, name, value, len);
	return 0;
}

static int put_xattrs(struct exporter *x, ext2_ino_t ino, const char *path)
{
	struct ext2_xattr_handle *h;
	errcode_t r = ext2fs_xattrs_open(x->fs, ino, &h);
	if (r)
		return fail("xattrs of", path, r);
	r = ext2fs_xattrs_read(h);
	if (!r)
		r = ext2fs_xattrs_iterate(h, add_xattr, x->e);
	ext2fs_xattrs_close(&h);
	return r ? fail("xattrs of", path, r) : 0;
}

/* Reads the whole body of ino (a file or a slow symlink) into *out. */
static int read_body(struct exporter *x, ext2_ino_t ino, struct ext2_inode *in, const char *path,
                     char **out, size_t *len)
{
	size_t size = EXT2_I_SIZE(in);
	char *buf = malloc(size + 1);
	if (!buf)
		return fail("no memory for", path, 0);
	if (in->i_flags & EXT4_INLINE_DATA_FL) {
		size_t got = size;
		errcode_t r = ext2fs_inline_data_get(x->fs, ino, in, buf, &got);
		if (r || got < size) {
			free(buf);
			return fail("inline data of", path, r);
		}
	} else if (ext2fs_is_fast_symlink(in)) {
		memcpy(buf, in->i_block, size < sizeof(in->i_block) ? size : sizeof(in->i_block));
	} else {
		ext2_file_t f;
		unsigned int got = 0;
		size_t done = 0;
		errcode_t r = ext2fs_file_open2(x->fs, ino, in, 0, &f);
		if (r) {
			free(buf);
			return fail("opening", path, r);
		}
		while (!r && done < size) {
			unsigned int want =
			    size - done > (1u << 30) ? 1u << 30 : (unsigned int)(size - done);
			r = ext2fs_file_read(f, buf + done, want, &got);
			if (!r && !got)
				r = EXT2_ET_SHORT_READ;
			done += got;
		}
		ext2fs_file_close(f);
		if (r) {
			free(buf);
			return fail("reading", path, r);
		}
	}
	buf[size] = 0;
	*out = buf;
	*len = size;
	return 0;
}

/* The first path of a multiply linked inode, or NULL (and it is noted). */
static const char *link_of(struct exporter *x, ext2_ino_t ino, const char *path)
{
	for (size_t i = 0; i < x->nseen; i++)
		if (x->seen[i].ino == ino)
			return x->seen[i].path;
	if (x->nseen == x->capseen) {
		size_t cap = x->capseen ? x->capseen * 2 : 64;
		struct seen *v = realloc(x->seen, cap * sizeof(*v));
		if (!v)
			return NULL;
		x->seen = v, x->capseen = cap;
	}
	x->seen[x->nseen].ino = ino;
	x->seen[x->nseen].path = strdup(path);
	if (x->seen[x->nseen].path)
		x->nseen++;
	return NULL;
}

static void set_dev(struct archive_entry *e, const struct ext2_inode *in)
{
	unsigned int maj, min;
	if (in->i_block[0]) {
		maj = (in->i_block[0] >> 8) & 0xff;
		min = in->i_block[0] & 0xff;
	} else {
		maj = (in->i_block[1] & 0xfff00) >> 8;
		min = (in->i_block[1] & 0xff) | ((in->i_block[1] >> 12) & 0xfff00);
	}
	archive_entry_set_rdevmajor(e, maj);
	archive_entry_set_rdevminor(e, min);
}

/* Writes the entry for ino at path (its body too). */
static int put_entry(struct exporter *x, ext2_ino_t ino, const char *path)
{
	struct ext2_inode in;
	errcode_t r = ext2fs_read_inode(x->fs, ino, &in);
	if (r)
		return fail("inode of", path, r);
	struct archive_entry *e = x->e;
	archive_entry_clear(e);
	archive_entry_set_pathname(e, path);
	archive_entry_set_mode(e, in.i_mode);
	archive_entry_set_uid(e, inode_uid(in));
	archive_entry_set_gid(e, inode_gid(in));
	archive_entry_set_mtime(e, in.i_mtime, 0);
	char *body = NULL;
	size_t len = 0;
	const char *first = NULL;
	if (!LINUX_S_ISDIR(in.i_mode) && in.i_links_count > 1)
		first = link_of(x, ino, path);
	if (first) {
		archive_entry_set_hardlink(e, first);
		archive_entry_set_size(e, 0);
	} else {
		if (put_xattrs(x, ino, path) < 0)
			return -1;
		if (LINUX_S_ISREG(in.i_mode) || LINUX_S_ISLNK(in.i_mode))
			if (read_body(x, ino, &in, path, &body, &len) < 0)
				return -1;
		if (LINUX_S_ISLNK(in.i_mode))
			archive_entry_set_symlink(e, body);
		else if (LINUX_S_ISCHR(in.i_mode) || LINUX_S_ISBLK(in.i_mode))
			set_dev(e, &in);
		archive_entry_set_size(e, LINUX_S_ISREG(in.i_mode) ? (la_int64_t)len : 0);
	}
	int rc = 0;
	if (archive_write_header(x->a, e) != ARCHIVE_OK)
		rc = fail(archive_error_string(x->a), path, 0);
	else if (LINUX_S_ISREG(in.i_mode) && !first && len &&
	         archive_write_data(x->a, body, len) != (la_ssize_t)len)
		rc = fail(archive_error_string(x->a), path, 0);
	free(body);
	x->entries++;
	return rc;
}

/* Writes the entries of directory dir (path: its name, "" for the root)
 * and of every directory below it. */
static int walk(struct exporter *x, ext2_ino_t dir, const char *path)
{
	struct names ns = { 0 };
	int rc = 0;
	errcode_t r = ext2fs_dir_iterate2(x->fs, dir, 0, NULL, collect, &ns);
	if (r)
		rc = fail("listing", path, r);
	if (!rc && ns.n)
		qsort(ns.v, ns.n, sizeof(*ns.v), by_name);
	for (size_t i = 0; i < ns.n && !rc; i++) {
		if (!*path && !strcmp(ns.v[i].s, "lost+found"))
			continue;
		size_t len = strlen(path) + strlen(ns.v[i].s) + 2;
		char *p = malloc(len);
		if (!p) {
			rc = fail("no memory for", ns.v[i].s, 0);
			break;
		}
		snprintf(p, len, "%s%s%s", path, *path ? "/" : "", ns.v[i].s);
		struct ext2_inode in;
		rc = put_entry(x, ns.v[i].ino, p);
		if (!rc && !ext2fs_read_inode(x->fs, ns.v[i].ino, &in) && LINUX_S_ISDIR(in.i_mode))
			rc = walk(x, ns.v[i].ino, p);
		free(p);
	}
	for (size_t i = 0; i < ns.n; i++)
		free(ns.v[i].s);
	free(ns.v);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: ext4_tar IMAGE.ext4 OUT.tar\n");
		return 2;
	}
	/* pax names are UTF-8: libarchive converts from the locale's charset. */
	if (!setlocale(LC_CTYPE, "C.UTF-8")) {
		fprintf(stderr, "ext4_tar: no C.UTF-8 locale\n");
		return 1;
	}
	struct exporter x = { .a = archive_write_new(), .e = archive_entry_new() };
	errcode_t r = ext2fs_open(argv[1], 0, 0, 0, unix_io_manager, &x.fs);
	int rc = 0;
	if (r)
		rc = fail("opening (not an ext2/3/4 image?)", argv[1], r);
	else if (!x.a || !x.e || archive_write_set_format_pax_restricted(x.a) != ARCHIVE_OK ||
	         archive_write_open_filename(x.a, argv[2]) != ARCHIVE_OK)
		rc = fail("writing", argv[2], 0);
	else {
		rc = walk(&x, EXT2_ROOT_INO, "");
		if (archive_write_close(x.a) != ARCHIVE_OK && !rc)
			rc = fail("closing", argv[2], 0);
	}
	if (x.a)
		archive_write_free(x.a);
	if (x.e)
		archive_entry_free(x.e);
	if (x.fs)
		ext2fs_close_free(&x.fs);
	for (size_t i = 0; i < x.nseen; i++)
		free(x.seen[i].path);
	free(x.seen);
	if (!rc)
		fprintf(stderr, "ext4_tar: %lu entries\n", x.entries);
	return rc ? 1 : 0;
}
