#include "snapshot/state_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "errf.h"
#include "io.h"

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint32_t crc(const uint8_t *p, size_t len)
{
	uLong c = crc32(0L, Z_NULL, 0);
	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		c = crc32(c, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)c;
}

void sf_writer_init(struct sf_writer *w)
{
	memset(w, 0, sizeof(*w));
	w->cap = 4096;
	w->buf = calloc(1, w->cap);
	if (!w->buf)
		w->error = -ENOMEM;
	w->len = SF_HEADER_SIZE;
}

static int reserve(struct sf_writer *w, size_t more)
{
	if (w->error)
		return w->error;
	if (more > SF_MAX_SIZE || w->len + more > SF_MAX_SIZE)
		return w->error = -EFBIG;
	size_t need = w->len + more;
	if (need <= w->cap)
		return 0;
	size_t cap = w->cap;
	while (cap < need)
		cap *= 2;
	uint8_t *b = realloc(w->buf, cap);
	if (!b)
		return w->error = -ENOMEM;
	memset(b + w->cap, 0, cap - w->cap);
	w->buf = b;
	w->cap = cap;
	return 0;
}

void sf_add(struct sf_writer *w, uint32_t tag, uint32_t instance, const void *data, size_t len)
{
	size_t padded = (len + 7) & ~(size_t)7;
	if (padded < len || reserve(w, SF_SECTION_HDR + padded) < 0)
		return;
	if (w->nsections >= SF_MAX_SECTIONS) {
		w->error = -E2BIG;
		return;
	}
	uint8_t *p = w->buf + w->len;
	put32(p + SF_S_TAG, tag);
	put32(p + SF_S_INSTANCE, instance);
	put64(p + SF_S_LEN, len);
	if (len)
		memcpy(p + SF_SECTION_HDR, data, len);
	memset(p + SF_SECTION_HDR + len, 0, padded - len);
	w->len += SF_SECTION_HDR + padded;
	w->nsections++;
}

static void finish_header(struct sf_writer *w)
{
	uint8_t *h = w->buf;
	memcpy(h + SF_H_MAGIC, SF_MAGIC, SF_MAGIC_LEN);
	put32(h + SF_H_VERSION, SF_VERSION);
	put32(h + SF_H_NSECTIONS, w->nsections);
	put64(h + SF_H_PAYLOAD_LEN, w->len - SF_HEADER_SIZE);
	put32(h + SF_H_PAYLOAD_CRC, crc(w->buf + SF_HEADER_SIZE, w->len - SF_HEADER_SIZE));
	put32(h + SF_H_HEADER_CRC, crc(h, SF_H_HEADER_CRC));
}

int sf_write_file(struct sf_writer *w, int dirfd, const char *name)
{
	if (w->error)
		return w->error;
	finish_header(w);
	char tmp[256];
	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, w->buf, w->len);
	if (!r && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (!r && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r)
		unlinkat(dirfd, tmp, 0);
	return r;
}

void sf_writer_free(struct sf_writer *w)
{
	free(w->buf);
	memset(w, 0, sizeof(*w));
}

int sf_parse(struct sf_reader *r, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	if (len < SF_HEADER_SIZE)
		return errf(err, errlen, -EINVAL, "state file is truncated (%zu bytes)", len);
	if (memcmp(buf + SF_H_MAGIC, SF_MAGIC, SF_MAGIC_LEN) != 0)
		return errf(err, errlen, -EINVAL,
		            "state file has a wrong magic (not a Cove snapshot)");
	if (get32(buf + SF_H_HEADER_CRC) != crc(buf, SF_H_HEADER_CRC))
		return errf(err, errlen, -EINVAL, "state file header checksum mismatch");
	uint32_t version = get32(buf + SF_H_VERSION);
	if (version != SF_VERSION)
		return errf(err, errlen, -EINVAL,
		            "state file version %u is not supported (this cove-vmm reads %u)",
		            version, SF_VERSION);
	uint32_t nsections = get32(buf + SF_H_NSECTIONS);
	uint64_t payload = get64(buf + SF_H_PAYLOAD_LEN);
	if (payload != len - SF_HEADER_SIZE)
		return errf(
		    err, errlen, -EINVAL,
		    "state file is truncated or has trailing bytes (%zu of %llu payload bytes)",
		    len - SF_HEADER_SIZE, (unsigned long long)payload);
	if (get32(buf + SF_H_PAYLOAD_CRC) != crc(buf + SF_HEADER_SIZE, len - SF_HEADER_SIZE))
		return errf(err, errlen, -EINVAL, "state file checksum mismatch (corrupted)");
	if (nsections > SF_MAX_SECTIONS)
		return errf(err, errlen, -EINVAL, "state file claims %u sections", nsections);
	r->sections = calloc(nsections ? nsections : 1, sizeof(*r->sections));
	if (!r->sections)
		return errf(err, errlen, -ENOMEM, "out of memory");
	size_t off = SF_HEADER_SIZE;
	for (uint32_t i = 0; i < nsections; i++) {
		if (len - off < SF_SECTION_HDR) {
			sf_reader_free(r);
			return errf(err, errlen, -EINVAL, "state file section %u is truncated", i);
		}
		struct sf_section *s = &r->sections[i];
		s->tag = get32(buf + off + SF_S_TAG);
		s->instance = get32(buf + off + SF_S_INSTANCE);
		s->len = get64(buf + off + SF_S_LEN);
		off += SF_SECTION_HDR;
		uint64_t padded = (s->len + 7) & ~(uint64_t)7;
		if (s->len > len - off || padded > len - off) {
			sf_reader_free(r);
			return errf(err, errlen, -EINVAL, "state file section %u runs past the end",
			            i);
		}
		s->data = buf + off;
		off += (size_t)padded;
	}
	if (off != len) {
		sf_reader_free(r);
		return errf(err, errlen, -EINVAL, "state file has bytes after its last section");
	}
	r->nsections = nsections;
	return 0;
}

int sf_read_file(struct sf_reader *r, int dirfd, const char *name, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "cannot open state file '%s': %s", name,
		            strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return errf(err, errlen, -EINVAL, "state file '%s' is not a regular file", name);
	}
	if (st.st_size > SF_MAX_SIZE) {
		close(fd);
		return errf(err, errlen, -EFBIG, "state file '%s' is too large (%lld bytes)", name,
		            (long long)st.st_size);
	}
	size_t len = (size_t)st.st_size;
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf) {
		close(fd);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	/* A file that shrank since fstat reads short: the parse reports it. */
	size_t off = 0;
	if (len && pread_all(fd, buf, len, 0) == 0)
		off = len;
	close(fd);
	int rc = sf_parse(r, buf, off, err, errlen);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	r->buf = buf;
	r->len = off;
	return 0;
}

void sf_reader_free(struct sf_reader *r)
{
	free(r->sections);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

const struct sf_section *sf_find_any(const struct sf_reader *r, uint32_t tag, uint32_t instance)
{
	for (uint32_t i = 0; i < r->nsections; i++)
		if (r->sections[i].tag == tag && r->sections[i].instance == instance)
			return &r->sections[i];
	return NULL;
}

const void *sf_find(const struct sf_reader *r, uint32_t tag, uint32_t instance, size_t len)
{
	const struct sf_section *s = sf_find_any(r, tag, instance);
	return s && s->len == len ? s->data : NULL;
}
