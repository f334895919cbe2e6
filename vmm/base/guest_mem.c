#include "base/guest_mem.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void gmem_layout(struct guest_mem *m, uint64_t ram_size, struct gmem_hole hole)
{
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	m->ram_size = ram_size;
	uint64_t low = ram_size < hole.start ? ram_size : hole.start;
	m->regions[0] = (struct gmem_region){ .gpa = 0, .size = low, .offset = 0 };
	m->nregions = 1;
	if (ram_size > low) {
		m->regions[1] =
		    (struct gmem_region){ .gpa = hole.end, .size = ram_size - low, .offset = low };
		m->nregions = 2;
	}
}

/* Reserves ram_size bytes of address space on a GMEM_HUGE_PAGE boundary and
 * maps there: anonymous memory (fd < 0) or fd's first ram_size bytes
 * MAP_PRIVATE.  A 2 MiB-aligned mapping is what lets the host map it with
 * huge pages (anonymous THP, or a file's large folios: a snapshot on a tmpfs
 * mounted huge=within_size), and KVM then maps guest RAM in 2 MiB steps:
 * one nested page fault where 4 KiB pages took up to 512. */
static uint8_t *map_aligned(uint64_t ram_size, int fd)
{
	size_t span = ram_size + GMEM_HUGE_PAGE;
	uint8_t *raw =
	    mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	uint8_t *base =
	    (uint8_t *)(((uintptr_t)raw + GMEM_HUGE_PAGE - 1) & ~(uintptr_t)(GMEM_HUGE_PAGE - 1));
	void *p = fd < 0 ? mmap(base, ram_size, PROT_READ | PROT_WRITE,
	                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0)
	                 : mmap(base, ram_size, PROT_READ | PROT_WRITE,
	                        MAP_PRIVATE | MAP_NORESERVE | MAP_FIXED, fd, 0);
	if (p == MAP_FAILED) {
		int e = errno;
		munmap(raw, span);
		errno = e;
		return NULL;
	}
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	if (raw + span > base + ram_size)
		munmap(base + ram_size, (size_t)(raw + span - (base + ram_size)));
	return base;
}

int gmem_create(struct guest_mem *m, uint64_t ram_size, struct gmem_hole hole)
{
	if (ram_size == 0 || ram_size % 4096)
		return -EINVAL;
	gmem_layout(m, ram_size, hole);
	/* Anonymous memory with transparent huge pages where the host allows
	 * them (QEMU does the same).  The mapping is this process's alone; a
	 * snapshot writes what the guest touched (snapshot/save.c), and a
	 * restore maps its file instead. */
	m->base = map_aligned(ram_size, -1);
	if (!m->base)
		return -errno;
	(void)madvise(m->base, ram_size, MADV_HUGEPAGE);
	/* Guest RAM should not end up in core dumps of the monitor. */
	(void)madvise(m->base, ram_size, MADV_DONTDUMP);
	for (unsigned int i = 0; i < m->nregions; i++)
		m->regions[i].host = m->base + m->regions[i].offset;
	return 0;
}

int gmem_map_private(struct guest_mem *m, int fd, uint64_t ram_size, struct gmem_hole hole)
{
	if (ram_size == 0 || ram_size % 4096)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	gmem_layout(m, ram_size, hole);
	m->base = map_aligned(ram_size, fd);
	if (!m->base)
		return -errno;
	(void)madvise(m->base, ram_size, MADV_DONTDUMP);
	for (unsigned int i = 0; i < m->nregions; i++)
		m->regions[i].host = m->base + m->regions[i].offset;
	return 0;
}

void gmem_destroy(struct guest_mem *m)
{
	if (m->base)
		munmap(m->base, m->ram_size);
	if (m->fd >= 0)
		close(m->fd);
	m->base = NULL;
	m->fd = -1;
	for (unsigned int i = 0; i < m->nregions; i++)
		m->regions[i].host = NULL;
}

void *gmem_ptr(const struct guest_mem *m, uint64_t gpa, uint64_t len)
{
	if (len == 0)
		len = 1;
	if (gpa + len < gpa)
		return NULL;
	for (unsigned int i = 0; i < m->nregions; i++) {
		const struct gmem_region *r = &m->regions[i];
		if (gpa >= r->gpa && gpa - r->gpa < r->size && len <= r->size - (gpa - r->gpa))
			return r->host ? r->host + (gpa - r->gpa) : NULL;
	}
	return NULL;
}

int gmem_read(const struct guest_mem *m, uint64_t gpa, void *dst, uint64_t len)
{
	const void *p = gmem_ptr(m, gpa, len);
	if (!p)
		return -EFAULT;
	memcpy(dst, p, len);
	return 0;
}

int gmem_write(const struct guest_mem *m, uint64_t gpa, const void *src, uint64_t len)
{
	void *p = gmem_ptr(m, gpa, len);
	if (!p)
		return -EFAULT;
	memcpy(p, src, len);
	return 0;
}
