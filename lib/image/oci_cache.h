/* The content-addressed blob cache of image sources (oci_cache.c):
 * DIR/blobs/sha256/<hex>, each written to a temporary name beside it,
 * its digest and size checked, flushed, made 0444 and renamed.  A blob
 * present was checked when it went in, so it is never read again to be
 * checked.  DIR/tmp holds registry pulls in progress. */
#ifndef COVE_IMAGE_OCI_CACHE_H
#define COVE_IMAGE_OCI_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/image/oci_json.h"

struct oci_cache {
	int blobs_fd; /* DIR/blobs/sha256 */
	char dir[4096];
	unsigned int blobs_read; /* blobs read into the cache since open */
};

/* Reads up to @n bytes into @buf: how many (0 at the end) or -errno with
 * a message in @err. */
typedef ssize_t (*oci_read_fn)(void *arg, void *buf, size_t n, char *err, size_t errlen);

/* oci_cache_open() - the cache at @dir, made (0755) where missing.
 * Return: 0 or -errno with a message.  Close with oci_cache_close. */
int oci_cache_open(struct oci_cache *c, const char *dir, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void oci_cache_close(struct oci_cache *c);

/* oci_cache_has() - whether the blob @digest is cached; its size in *@size
 * (may be NULL). */
bool oci_cache_has(const struct oci_cache *c, const char *digest, uint64_t *size);

/* oci_cache_put() - reads a blob from @rd to its end into the cache and
 * counts it in blobs_read.  With @want (a digest) the content must hash
 * to it, and with @want_size >= 0 be that long: a mismatch is -EINVAL
 * naming @what and both values, and nothing is kept.  Its digest goes to
 * @got (may be NULL).  Return: 0 or -errno with a message. */
int oci_cache_put(struct oci_cache *c, oci_read_fn rd, void *arg, const char *want,
                  int64_t want_size, const char *what, char got[OCI_DIGEST_LEN + 1], char *err,
                  size_t errlen) __attribute__((warn_unused_result));

/* oci_cache_put_mem() - oci_cache_put of @len bytes at @buf, unless
 * they are cached already; their digest into @got (not NULL). */
int oci_cache_put_mem(struct oci_cache *c, const void *buf, size_t len, const char *what,
                      char got[OCI_DIGEST_LEN + 1], char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* oci_cache_read() - a cached blob of at most @max bytes in memory
 * (malloc'ed, NUL-ended, *@len its length).  Return: 0 or -errno with a
 * message naming @what. */
int oci_cache_read(const struct oci_cache *c, const char *digest, size_t max, const char *what,
                   char **text, size_t *len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* oci_cache_path() - the path of the blob @digest in the cache. */
void oci_cache_path(const struct oci_cache *c, const char *digest, char *out, size_t n);

#endif
