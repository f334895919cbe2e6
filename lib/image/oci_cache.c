/* The blob cache of image sources (lib/image/oci_cache.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "lib/base/sha256.h"
#include "lib/image/oci_cache.h"

#define CHUNK (256 << 10)

/* mkdir that accepts a directory already there. */
static int mkdir_ok(const char *path)
{
	if (mkdir(path, 0755) == 0 || errno == EEXIST)
		return 0;
	return -errno;
}

int oci_cache_open(struct oci_cache *c, const char *dir, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->blobs_fd = -1;
	if (!dir || !*dir || strlen(dir) + 64 > sizeof(c->dir))
		return errf(err, errlen, -EINVAL,
		            "image cache: a directory of 1 to %zu bytes is needed",
		            sizeof(c->dir) - 64);
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	static const char *const sub[] = { "", "/blobs", "/blobs/sha256", "/tmp" };
	char p[sizeof(c->dir)];
	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", dir, sub[i]);
		int r = mkdir_ok(p);
		if (r < 0)
			return errf(err, errlen, r, "image cache: mkdir %s: %s", p, strerror(-r));
	}
	snprintf(p, sizeof(p), "%s/blobs/sha256", dir);
	c->blobs_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->blobs_fd < 0)
		return errf(err, errlen, -errno, "image cache: %s: %s", p, strerror(errno));
	return 0;
}

void oci_cache_close(struct oci_cache *c)
{
	if (c->blobs_fd >= 0)
		close(c->blobs_fd);
	c->blobs_fd = -1;
}

bool oci_cache_has(const struct oci_cache *c, const char *digest, uint64_t *size)
{
	struct stat st;
	if (!oci_digest_valid(digest) ||
	    fstatat(c->blobs_fd, digest + 7, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return false;
	if (size)
		*size = (uint64_t)st.st_size;
	return true;
}

void oci_cache_path(const struct oci_cache *c, const char *digest, char *out, size_t n)
{
	snprintf(out, n, "%s/blobs/sha256/%s", c->dir, digest + 7);
}

/* Copies @rd into @fd, hashing it; the byte count in *@total. */
static int copy_hashing(oci_read_fn rd, void *arg, int fd, struct sha256 *h, uint64_t *total,
                        char *err, size_t errlen)
{
	char *buf = malloc(CHUNK);
	if (!buf)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = 0;
	for (;;) {
		ssize_t n = rd(arg, buf, CHUNK, err, errlen);
		if (n <= 0) {
			r = (int)n;
			break;
		}
		*total += (uint64_t)n;
		if (*total > OCI_BLOB_MAX) {
			r = errf(err, errlen, -EFBIG, "a blob is larger than %llu bytes",
			         (unsigned long long)OCI_BLOB_MAX);
			break;
		}
		sha256_update(h, buf, (size_t)n);
		if ((r = write_all(fd, buf, (size_t)n)) < 0) {
			errf(err, errlen, r, "image cache: write: %s", strerror(-r));
			break;
		}
	}
	free(buf);
	return r;
}

/* The checks of a blob just read; 0 or -EINVAL with a message. */
static int check_blob(const char *got, uint64_t size, const char *want, int64_t want_size,
                      const char *what, char *err, size_t errlen)
{
	if (want && strcmp(got, want) != 0)
		return errf(err, errlen, -EINVAL, "%s: digest mismatch: named %s, content is %s",
		            what, want, got);
	if (want_size >= 0 && size != (uint64_t)want_size)
		return errf(err, errlen, -EINVAL, "%s: size mismatch: %s is %llu bytes, not %lld",
		            what, got, (unsigned long long)size, (long long)want_size);
	return 0;
}

int oci_cache_put(struct oci_cache *c, oci_read_fn rd, void *arg, const char *want,
                  int64_t want_size, const char *what, char got[OCI_DIGEST_LEN + 1], char *err,
                  size_t errlen)
{
	char tmp[32];
	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 100; tries++) {
		snprintf(tmp, sizeof(tmp), ".tmp-%d-%08x", (int)getpid(), (unsigned)random());
		fd = openat(c->blobs_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return errf(err, errlen, -errno, "image cache: %s: %s", c->dir,
			            strerror(errno));
	}
	if (fd < 0)
		return errf(err, errlen, -EEXIST, "image cache: no free temporary name");
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	char hex[SHA256_HEX], dg[OCI_DIGEST_LEN + 1];
	uint64_t size = 0;
	sha256_init(&h);
	int r = copy_hashing(rd, arg, fd, &h, &size, err, errlen);
	sha256_final(&h, d);
	sha256_hex(d, hex);
	snprintf(dg, sizeof(dg), "sha256:%s", hex);
	if (!r)
		r = check_blob(dg, size, want, want_size, what, err, errlen);
	/* Flushed before the name: a blob in the cache is trusted as it is. */
	if (!r && (fchmod(fd, 0444) < 0 || fsync(fd) < 0))
		r = errf(err, errlen, -errno, "image cache: %s: %s", what, strerror(errno));
	close(fd);
	if (!r && renameat(c->blobs_fd, tmp, c->blobs_fd, hex) < 0)
		r = errf(err, errlen, -errno, "image cache: rename %s: %s", hex, strerror(errno));
	if (r) {
		unlinkat(c->blobs_fd, tmp, 0);
		return r;
	}
	c->blobs_read++;
	if (got)
		memcpy(got, dg, sizeof(dg));
	return 0;
}

struct mem_reader {
	const char *p;
	size_t left;
};

static ssize_t mem_read(void *arg, void *buf, size_t n, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	struct mem_reader *m = arg;
	if (n > m->left)
		n = m->left;
	memcpy(buf, m->p, n);
	m->p += n, m->left -= n;
	return (ssize_t)n;
}

int oci_cache_put_mem(struct oci_cache *c, const void *buf, size_t len, const char *what,
                      char got[OCI_DIGEST_LEN + 1], char *err, size_t errlen)
{
	struct mem_reader m = { buf, len };
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	char hex[SHA256_HEX];
	sha256_init(&h);
	sha256_update(&h, buf, len);
	sha256_final(&h, d);
	sha256_hex(d, hex);
	snprintf(got, OCI_DIGEST_LEN + 1, "sha256:%s", hex);
	if (oci_cache_has(c, got, NULL)) /* a blob made again: nothing to read */
		return 0;
	return oci_cache_put(c, mem_read, &m, got, (int64_t)len, what, NULL, err, errlen);
}

int oci_cache_read(const struct oci_cache *c, const char *digest, size_t max, const char *what,
                   char **text, size_t *len, char *err, size_t errlen)
{
	char p[sizeof(c->dir) + 96];
	int e = 0;
	struct stat st;
	oci_cache_path(c, digest, p, sizeof(p));
	*text = file_slurp(p, max, len, &st, &e);
	if (!*text)
		return errf(err, errlen, -e, "%s %s: %s", what, digest,
		            e == EFBIG ? "too large" : strerror(e));
	return 0;
}
