/* An address-range bus: devices register [base, base + len) with a callback
 * that gets the offset within the device.  One bus for port I/O, one for
 * MMIO.  Registration happens before any vCPU runs; dispatch is read-only
 * and may run on several vCPU threads at once (devices lock themselves). */
#ifndef COVE_BUS_H
#define COVE_BUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* data holds len bytes (1..8 for PIO/MMIO); on a read the device fills it
 * (it arrives zeroed, so a device may leave bytes it does not implement). */
typedef void (*bus_access_fn)(void *opaque, uint64_t offset, uint8_t *data, uint32_t len,
                              bool is_write);

struct bus_range {
	uint64_t base;
	uint64_t len;
	bus_access_fn fn;
	void *opaque;
	const char *name;
};

#define BUS_MAX_RANGES 64

struct bus {
	struct bus_range ranges[BUS_MAX_RANGES]; /* sorted by base */
	size_t n;
};

/* Adds a range.  -EINVAL for len 0 or a range that wraps, -EEXIST when it
 * overlaps one already registered, -ENOSPC when the bus is full. */
int bus_register(struct bus *b, uint64_t base, uint64_t len, bus_access_fn fn, void *opaque,
                 const char *name) __attribute__((warn_unused_result));

/* The range holding [addr, addr + len), or NULL. */
const struct bus_range *bus_find(const struct bus *b, uint64_t addr, uint32_t len);

/* Dispatches an access.  Reads are zero-filled first, so an unclaimed read
 * returns zeros.  Returns false when no device claims the address. */
bool bus_access(const struct bus *b, uint64_t addr, uint8_t *data, uint32_t len, bool is_write);

#endif
