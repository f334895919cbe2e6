#include "wsrec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

int wsrec_parse(const uint8_t *buf, size_t len, uint64_t ram_bytes, struct wsrec *out, char *err,
                size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (len < WSREC_HDR || memcmp(buf, WSREC_MAGIC, 8) != 0)
		return errf(err, errlen, -EINVAL, "not a working-set record");
	uint64_t ram = get64(buf + 8);
	uint32_t n = get32(buf + 16);
	if (get32(buf + 20) != 0)
		return errf(err, errlen, -EINVAL, "unknown flags");
	if (ram == 0 || ram % WSREC_PAGE || ram / WSREC_PAGE > UINT32_MAX)
		return errf(err, errlen, -EINVAL, "bad RAM size %llu", (unsigned long long)ram);
	if (ram_bytes && ram != ram_bytes)
		return errf(err, errlen, -EINVAL, "recorded for %llu bytes of RAM, not %llu",
		            (unsigned long long)ram, (unsigned long long)ram_bytes);
	if (n == 0 || n > WSREC_MAX_RANGES)
		return errf(err, errlen, -EINVAL, "%u ranges (1 to %u)", n, WSREC_MAX_RANGES);
	if (len != WSREC_HDR + (size_t)n * 8)
		return errf(err, errlen, -EINVAL, "%zu bytes for %u ranges", len, n);
	uint64_t ram_pages = ram / WSREC_PAGE;
	struct wsrec_range *r = calloc(n, sizeof(*r));
	if (!r)
		return errf(err, errlen, -ENOMEM, "out of memory");
	uint64_t next = 0, total = 0; /* the first page a range may start at */
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *p = buf + WSREC_HDR + (size_t)i * 8;
		uint32_t first = get32(p), w = get32(p + 4);
		uint32_t pages = w & ~WSREC_WRITTEN;
		if (pages == 0 || (i > 0 && first < next) || (uint64_t)first + pages > ram_pages) {
			free(r);
			return errf(err, errlen, -EINVAL,
			            "range %u (page %u, %u pages) overlaps, is out of order or "
			            "lies outside RAM",
			            i, first, pages);
		}
		r[i] = (struct wsrec_range){ .first = first,
			                     .pages = pages,
			                     .written = (w & WSREC_WRITTEN) != 0 };
		next = (uint64_t)first + pages;
		total += pages;
	}
	*out = (struct wsrec){ .ram_bytes = ram, .count = n, .r = r, .pages = total };
	return 0;
}

size_t wsrec_format(const struct wsrec_range *r, uint32_t n, uint64_t ram_bytes, uint8_t *out,
                    size_t cap)
{
	if (n == 0 || n > WSREC_MAX_RANGES || cap < WSREC_HDR + (size_t)n * 8)
		return 0;
	if (ram_bytes == 0 || ram_bytes % WSREC_PAGE || ram_bytes / WSREC_PAGE > UINT32_MAX)
		return 0;
	uint64_t next = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (r[i].pages == 0 || r[i].pages & WSREC_WRITTEN || (i > 0 && r[i].first < next) ||
		    (uint64_t)r[i].first + r[i].pages > ram_bytes / WSREC_PAGE)
			return 0;
		next = (uint64_t)r[i].first + r[i].pages;
	}
	memcpy(out, WSREC_MAGIC, 8);
	put64(out + 8, ram_bytes);
	put32(out + 16, n);
	put32(out + 20, 0);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *p = out + WSREC_HDR + (size_t)i * 8;
		put32(p, r[i].first);
		put32(p + 4, r[i].pages | (r[i].written ? WSREC_WRITTEN : 0));
	}
	return WSREC_HDR + (size_t)n * 8;
}

bool wsrec_add(struct wsrec_range *r, uint32_t *n, uint32_t cap, uint32_t page, bool written)
{
	if (*n > 0) {
		struct wsrec_range *last = &r[*n - 1];
		uint64_t end = (uint64_t)last->first + last->pages;
		if (end == page && last->written == written && last->pages < (WSREC_WRITTEN - 1)) {
			last->pages++;
			return true;
		}
	}
	if (*n >= cap)
		return false;
	r[(*n)++] = (struct wsrec_range){ .first = page, .pages = 1, .written = written };
	return true;
}

void wsrec_free(struct wsrec *w)
{
	free(w->r);
	w->r = NULL;
	w->count = 0;
}
