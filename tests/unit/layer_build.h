/* Test layers (lib/image tests): tar files written with libarchive's
 * writer (pax; plain, gzip or zstd), and the checks of an image from
 * outside: e2fsck -fn, debugfs's stat, a directory's entry count. */
#ifndef COVE_TEST_LAYER_BUILD_H
#define COVE_TEST_LAYER_BUILD_H

#include <stddef.h>
#include <stdint.h>

enum lb_filter { LB_PLAIN, LB_GZIP, LB_ZSTD };

#define LB_XATTRS 4

struct lb {
	struct archive *a;
	struct archive_entry *e;
	/* xattrs for the next entry */
	const char *xname[LB_XATTRS];
	const void *xval[LB_XATTRS];
	size_t xlen[LB_XATTRS];
	int nx;
};

void lb_open(struct lb *b, const char *path, enum lb_filter f);
void lb_close(struct lb *b);

/* Entries; owner 0:0 and mtime 1700000000 unless given. */
void lb_dir(struct lb *b, const char *name, unsigned int perm);
void lb_file(struct lb *b, const char *name, unsigned int perm, const void *data, size_t len);
void lb_file_owned(struct lb *b, const char *name, unsigned int perm, unsigned int uid,
                   unsigned int gid, const void *data, size_t len);
void lb_symlink(struct lb *b, const char *name, const char *target);
void lb_hardlink(struct lb *b, const char *name, const char *target);
/* type: AE_IFCHR, AE_IFBLK or AE_IFIFO */
void lb_node(struct lb *b, const char *name, unsigned int type, unsigned int major,
             unsigned int minor);
/* A sparse entry of size bytes whose only data is len bytes at off. */
void lb_sparse(struct lb *b, const char *name, uint64_t size, uint64_t off, const void *data,
               size_t len);
/* An xattr for the next entry (the pointers must live until then). */
void lb_xattr(struct lb *b, const char *name, const void *val, size_t len);

/* e2fsck -fn: its exit status (0: clean); its output goes to stderr
 * when it is not clean. */
int lb_fsck(const char *image);

/* debugfs -R 'stat PATH' IMAGE's output into out. */
void lb_stat(const char *image, const char *path, char *out, size_t len);

/* How many entries dir holds besides "." and "..". */
int lb_count(const char *dir);

#endif
