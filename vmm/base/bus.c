#include "base/bus.h"

#include <errno.h>
#include <string.h>

int bus_register(struct bus *b, uint64_t base, uint64_t len, bus_access_fn fn, void *opaque,
                 const char *name)
{
	if (len == 0 || base + len < base || !fn)
		return -EINVAL;
	if (b->n == BUS_MAX_RANGES)
		return -ENOSPC;
	size_t i = 0;
	while (i < b->n && b->ranges[i].base < base)
		i++;
	/* Sorted, so only the neighbours can overlap. */
	if (i > 0 && b->ranges[i - 1].base + b->ranges[i - 1].len > base)
		return -EEXIST;
	if (i < b->n && base + len > b->ranges[i].base)
		return -EEXIST;
	memmove(&b->ranges[i + 1], &b->ranges[i], (b->n - i) * sizeof(b->ranges[0]));
	b->ranges[i] = (struct bus_range){
		.base = base, .len = len, .fn = fn, .opaque = opaque, .name = name
	};
	b->n++;
	return 0;
}

const struct bus_range *bus_find(const struct bus *b, uint64_t addr, uint32_t len)
{
	size_t lo = 0, hi = b->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct bus_range *r = &b->ranges[mid];
		if (addr < r->base)
			hi = mid;
		else if (addr - r->base >= r->len)
			lo = mid + 1;
		else
			return len <= r->len - (addr - r->base) ? r : NULL;
	}
	return NULL;
}

bool bus_access(const struct bus *b, uint64_t addr, uint8_t *data, uint32_t len, bool is_write)
{
	if (!is_write)
		memset(data, 0, len);
	const struct bus_range *r = bus_find(b, addr, len);
	if (!r)
		return false;
	r->fn(r->opaque, addr - r->base, data, len, is_write);
	return true;
}
