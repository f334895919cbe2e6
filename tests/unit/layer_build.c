/* Test layers and outside checks of images; see layer_build.h. */
#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "layer_build.h"

#define MTIME 1700000000

void lb_open(struct lb *b, const char *path, enum lb_filter f)
{
	memset(b, 0, sizeof(*b));
	b->a = archive_write_new();
	b->e = archive_entry_new();
	ck_assert_ptr_nonnull(b->a);
	ck_assert_int_eq(archive_write_set_format_pax(b->a), ARCHIVE_OK);
	if (f == LB_GZIP)
		ck_assert_int_eq(archive_write_add_filter_gzip(b->a), ARCHIVE_OK);
	if (f == LB_ZSTD)
		ck_assert_int_eq(archive_write_add_filter_zstd(b->a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_filename(b->a, path), ARCHIVE_OK);
}

void lb_close(struct lb *b)
{
	ck_assert_int_eq(archive_write_close(b->a), ARCHIVE_OK);
	archive_write_free(b->a);
	archive_entry_free(b->e);
}

void lb_xattr(struct lb *b, const char *name, const void *val, size_t len)
{
	ck_assert_int_lt(b->nx, LB_XATTRS);
	b->xname[b->nx] = name;
	b->xval[b->nx] = val;
	b->xlen[b->nx++] = len;
}

static struct archive_entry *entry(struct lb *b, const char *name, unsigned int type,
                                   unsigned int perm)
{
	archive_entry_clear(b->e);
	archive_entry_set_pathname(b->e, name);
	archive_entry_set_filetype(b->e, type);
	archive_entry_set_perm(b->e, perm);
	archive_entry_set_mtime(b->e, MTIME, 0);
	for (int i = 0; i < b->nx; i++)
		archive_entry_xattr_add_entry(b->e, b->xname[i], b->xval[i], b->xlen[i]);
	b->nx = 0;
	return b->e;
}

static void put(struct lb *b, const void *data, size_t len)
{
	ck_assert_int_eq(archive_write_header(b->a, b->e), ARCHIVE_OK);
	if (len)
		ck_assert_int_eq(archive_write_data(b->a, data, len), (la_ssize_t)len);
}

void lb_dir(struct lb *b, const char *name, unsigned int perm)
{
	entry(b, name, AE_IFDIR, perm);
	put(b, NULL, 0);
}

void lb_file_owned(struct lb *b, const char *name, unsigned int perm, unsigned int uid,
                   unsigned int gid, const void *data, size_t len)
{
	struct archive_entry *e = entry(b, name, AE_IFREG, perm);
	archive_entry_set_uid(e, uid);
	archive_entry_set_gid(e, gid);
	archive_entry_set_size(e, (la_int64_t)len);
	put(b, data, len);
}

void lb_file(struct lb *b, const char *name, unsigned int perm, const void *data, size_t len)
{
	lb_file_owned(b, name, perm, 0, 0, data, len);
}

void lb_symlink(struct lb *b, const char *name, const char *target)
{
	archive_entry_set_symlink(entry(b, name, AE_IFLNK, 0777), target);
	put(b, NULL, 0);
}

void lb_hardlink(struct lb *b, const char *name, const char *target)
{
	struct archive_entry *e = entry(b, name, AE_IFREG, 0644);
	archive_entry_set_hardlink(e, target);
	archive_entry_set_size(e, 0);
	put(b, NULL, 0);
}

void lb_node(struct lb *b, const char *name, unsigned int type, unsigned int major,
             unsigned int minor)
{
	struct archive_entry *e = entry(b, name, type, 0660);
	archive_entry_set_rdevmajor(e, major);
	archive_entry_set_rdevminor(e, minor);
	put(b, NULL, 0);
}

void lb_sparse(struct lb *b, const char *name, uint64_t size, uint64_t off, const void *data,
               size_t len)
{
	struct archive_entry *e = entry(b, name, AE_IFREG, 0644);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_sparse_add_entry(e, (la_int64_t)off, (la_int64_t)len);
	ck_assert_int_eq(archive_write_header(b->a, e), ARCHIVE_OK);
	/* pax's writer takes the whole file and drops what falls in holes */
	static const char zero[1 << 16];
	for (uint64_t at = 0; at < off;) {
		size_t n = off - at < sizeof(zero) ? (size_t)(off - at) : sizeof(zero);
		ck_assert_int_eq(archive_write_data(b->a, zero, n), (la_ssize_t)n);
		at += n;
	}
	ck_assert_int_eq(archive_write_data(b->a, data, len), (la_ssize_t)len);
}

int lb_fsck(const char *image)
{
	char cmd[512], out[8192];
	snprintf(cmd, sizeof(cmd), "timeout 60 e2fsck -fn '%s' 2>&1", image);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	int st = pclose(p);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
	if (rc)
		fprintf(stderr, "e2fsck -fn %s: %d\n%s", image, rc, out);
	return rc;
}

void lb_stat(const char *image, const char *path, char *out, size_t len)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "timeout 60 debugfs -R 'stat \"%s\"' '%s' 2>/dev/null", path,
	         image);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(out, 1, len - 1, p);
	out[n] = 0;
	pclose(p);
}

int lb_count(const char *dir)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return n;
}
