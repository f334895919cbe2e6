/* Guest physical memory: the one place where guest addresses become host
 * pointers.  Every access is bounds- and overflow-checked; guest memory is
 * hostile input. */
#ifndef COVE_GUEST_MEM_H
#define COVE_GUEST_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GMEM_MAX_REGIONS 2

/* The guest-physical range below 4 GiB that is never RAM (device MMIO):
 * RAM runs from 0 up to start, and the rest continues at end.  The
 * architecture says where it is (arch/x86_64/layout.h: X86_MMIO_HOLE). */
struct gmem_hole {
	uint64_t start;
	uint64_t end;
};

struct gmem_region {
	uint64_t gpa;    /* first guest physical address */
	uint64_t size;   /* bytes */
	uint8_t *host;   /* mapping of [gpa, gpa + size) */
	uint64_t offset; /* offset of this region in the backing file */
};

struct guest_mem {
	struct gmem_region regions[GMEM_MAX_REGIONS];
	unsigned int nregions;
	uint64_t ram_size; /* total bytes of RAM */
	uint8_t *base;     /* one mapping of the whole backing file */
	int fd;            /* a file backing all RAM; -1 if anonymous (a boot) */
};

/* Lays out ram_size bytes of RAM around hole without mapping anything:
 * fills regions[] with host == NULL.  Pure, for tests. */
void gmem_layout(struct guest_mem *m, uint64_t ram_size, struct gmem_hole hole);

#define GMEM_HUGE_PAGE (2ULL << 20)

/* Creates guest RAM of ram_size bytes (a multiple of 4 KiB): anonymous
 * memory aligned to GMEM_HUGE_PAGE, with transparent huge pages asked for
 * (MADV_HUGEPAGE).  fd stays -1.  Returns 0 or -errno. */
int gmem_create(struct guest_mem *m, uint64_t ram_size, struct gmem_hole hole)
    __attribute__((warn_unused_result));

/* Maps ram_size bytes of the file fd (a snapshot's memory) MAP_PRIVATE as
 * guest RAM: pages load lazily from the file and are copied on the guest's
 * first write, so every VM mapping one file shares its unchanged pages.
 * fd is not kept.  Returns 0 or -errno. */
int gmem_map_private(struct guest_mem *m, int fd, uint64_t ram_size, struct gmem_hole hole)
    __attribute__((warn_unused_result));

/* Unmaps and closes; safe on a zeroed or half-created struct. */
void gmem_destroy(struct guest_mem *m);

/* The host pointer for [gpa, gpa + len), or NULL when any byte of it lies
 * outside RAM, crosses a region boundary, or the range overflows.  len 0 is
 * checked like len 1. */
void *gmem_ptr(const struct guest_mem *m, uint64_t gpa, uint64_t len);

/* Copies between guest and host; -EFAULT when the range is not RAM. */
int gmem_read(const struct guest_mem *m, uint64_t gpa, void *dst, uint64_t len)
    __attribute__((warn_unused_result));
int gmem_write(const struct guest_mem *m, uint64_t gpa, const void *src, uint64_t len)
    __attribute__((warn_unused_result));

#endif
