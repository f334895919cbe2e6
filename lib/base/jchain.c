/* The journal's hash chain: hashing a line and verifying a journal line by
 * line (jchain.h). */
#include "lib/base/jchain.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void jchain_hash(const char *line, size_t len, char out[SHA256_HEX])
{
	struct sha256 s;
	uint8_t d[SHA256_LEN];
	sha256_init(&s);
	sha256_update(&s, line, len);
	sha256_final(&s, d);
	sha256_hex(d, out);
}

void jchain_start(struct jchain *c)
{
	memset(c, 0, sizeof(*c));
	memset(c->hash, '0', SHA256_HEX - 1);
	c->hash[SHA256_HEX - 1] = 0;
}

static int broken(struct jchain *c, uint64_t line, const char *why, uint64_t a, uint64_t b)
{
	c->bad = line;
	snprintf(c->why, sizeof(c->why), why, (unsigned long long)a, (unsigned long long)b);
	return -1;
}

static bool is_hex64(const char *s)
{
	if (strlen(s) != SHA256_HEX - 1)
		return false;
	return strspn(s, "0123456789abcdef") == SHA256_HEX - 1;
}

int jchain_line(struct jchain *c, const char *line, size_t len)
{
	if (c->bad)
		return -1;
	uint64_t n = ++c->lines;
	if (len > JCHAIN_LINE_MAX)
		return broken(c, n, "longer than %llu bytes", JCHAIN_LINE_MAX, 0);
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *seq = json_object_get(o, "seq"), *prev = json_object_get(o, "prev");
	int rc = 0;
	if (!json_is_object(o)) {
		rc = broken(c, n, "not a JSON object", 0, 0);
	} else if (!json_is_integer(seq) || !json_is_string(prev) ||
	           !is_hex64(json_string_value(prev))) {
		rc = broken(c, n, "no \"seq\" number and \"prev\" hash", 0, 0);
	} else if ((uint64_t)json_integer_value(seq) != c->seq + 1 || json_integer_value(seq) < 1) {
		rc = broken(c, n,
		            "its seq is %llu where %llu was next (a line was removed or added)",
		            (uint64_t)json_integer_value(seq), c->seq + 1);
	} else if (strcmp(json_string_value(prev), c->hash) != 0) {
		rc = n == 1 ? broken(c, 1,
		                     "the first line's prev is not 64 zeros (lines before "
		                     "it were removed)",
		                     0, 0)
		            : broken(c, n - 1,
		                     "it does not hash to line %llu's prev: it was changed (or "
		                     "line %llu's prev was)",
		                     n, n);
	}
	json_decref(o);
	if (rc)
		return rc;
	c->seq++;
	jchain_hash(line, len, c->hash);
	if (c->anchor_seq && c->seq == c->anchor_seq && strcmp(c->hash, c->anchor_hash) != 0)
		return broken(c, n, "it is not the line coved wrote as seq %llu (changed since)",
		              c->seq, 0);
	return 0;
}

int jchain_finish(struct jchain *c)
{
	if (c->bad)
		return -1;
	if (c->anchor_seq > c->seq)
		return broken(c, c->lines + 1,
		              "the journal ends at seq %llu but coved wrote up to seq %llu (its "
		              "end was cut)",
		              c->seq, c->anchor_seq);
	return 0;
}

int jchain_verify(struct jchain *c, const char *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t l = nl ? (size_t)(nl - (buf + off)) : len - off;
		if (jchain_line(c, buf + off, l) < 0)
			return -1;
		if (!nl)
			return broken(c, c->lines, "it has no newline (a torn write)", 0, 0);
		off += l + 1;
	}
	return jchain_finish(c);
}

int jchain_verify_fd(struct jchain *c, int fd)
{
	/* A line longer than JCHAIN_LINE_MAX is broken: keep one byte more. */
	size_t cap = JCHAIN_LINE_MAX + 1, len = 0;
	char *line = malloc(cap);
	char buf[65536];
	ssize_t k;
	int rc = 0;
	if (!line)
		return -ENOMEM;
	while (rc == 0 && (k = read(fd, buf, sizeof(buf))) != 0) {
		if (k < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		for (ssize_t i = 0; i < k && rc == 0; i++) {
			if (buf[i] != '\n') {
				if (len < cap)
					line[len] = buf[i];
				len += len < cap;
				continue;
			}
			rc = jchain_line(c, line, len);
			len = 0;
		}
	}
	if (rc == 0 && len) {
		rc = jchain_line(c, line, len);
		if (rc == 0)
			rc = broken(c, c->lines, "it has no newline (a torn write)", 0, 0);
	}
	free(line);
	return rc ? rc : jchain_finish(c);
}

uint64_t jchain_tail_seq(const char *line, size_t len)
{
	json_t *o = json_loadb(line, len, 0, NULL);
	json_t *s = json_object_get(o, "seq");
	uint64_t v =
	    json_is_integer(s) && json_integer_value(s) > 0 ? (uint64_t)json_integer_value(s) : 0;
	json_decref(o);
	return v;
}
