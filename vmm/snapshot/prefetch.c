#include "snapshot/prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "io.h"
#include "wsrec.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Linux 6.10 (linux-libc-dev may be older): map guest memory into KVM's
 * nested page tables ahead of the vCPU (Documentation/virt/kvm/api.rst). */
#ifndef KVM_CAP_PRE_FAULT_MEMORY
#define KVM_CAP_PRE_FAULT_MEMORY 236
struct kvm_pre_fault_memory {
	__u64 gpa;
	__u64 size;
	__u64 flags;
	__u64 padding[5];
};
#define KVM_PRE_FAULT_MEMORY _IOWR(KVMIO, 0xd5, struct kvm_pre_fault_memory)
#endif

/* Ranges of the record closer than this are read ahead and pre-faulted as
 * one span: the pages between cost mappings of the page cache (no private
 * memory), and each span is one call where each range was one. */
#define PREFETCH_GAP_PAGES 16

#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_FILE    (1ULL << 61) /* file page or shared anonymous */
#define PM_CHUNK   4096         /* pagemap entries per read */

/* One VM per process: the restore's pagemap, what the restore did, and
 * the record between prefetch_restore() and prefetch_prefault(). */
static int pagemap_fd = -1;
static struct prefetch_stats stats;
static struct wsrec kept;

static int read_record(int fd, uint64_t ram_bytes, struct wsrec *w)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size < WSREC_HDR || st.st_size > WSREC_MAX_BYTES)
		return -EINVAL;
	size_t len = (size_t)st.st_size;
	uint8_t *buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	int r = pread_all(fd, buf, len, 0);
	if (r == 0)
		r = wsrec_parse(buf, len, ram_bytes, w, NULL, 0);
	free(buf);
	return r;
}

/* The span from range *i on: the ranges joined while the gap to the next
 * is at most PREFETCH_GAP_PAGES; *i moves past them.  The record's ranges
 * are sorted and inside RAM (wsrec_parse), so the span is too. */
static void next_span(const struct wsrec *w, uint32_t *i, uint64_t *first, uint64_t *end)
{
	*first = w->r[*i].first;
	*end = *first + w->r[*i].pages;
	for ((*i)++; *i < w->count && w->r[*i].first <= *end + PREFETCH_GAP_PAGES; (*i)++) {
		uint64_t e = (uint64_t)w->r[*i].first + w->r[*i].pages;
		if (e > *end)
			*end = e;
	}
}

void prefetch_restore(const struct guest_mem *m, int ws_fd)
{
	memset(&stats, 0, sizeof(stats));
	if (pagemap_fd < 0)
		pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (ws_fd < 0)
		return;
	struct wsrec w;
	int r = read_record(ws_fd, m->ram_size, &w);
	close(ws_fd);
	if (r < 0) {
		stats.error = r; /* a bad record costs the prefetch, not the restore */
		return;
	}
	int64_t t0 = mono_ns();
	bool populate = true;
	/* The written ranges first, each exactly (a page copied that the
	 * guest will not write is private memory for nothing): copying a page
	 * out of a file's huge page splits that huge page's mapping, and what
	 * is mapped after that stays mapped. */
	for (uint32_t i = 0; i < w.count; i++) {
		stats.pages += w.r[i].pages;
		if (!w.r[i].written)
			continue;
		uint8_t *p = m->base + (size_t)w.r[i].first * WSREC_PAGE;
		size_t len = (size_t)w.r[i].pages * WSREC_PAGE;
		if (madvise(p, len, populate ? MADV_POPULATE_WRITE : MADV_WILLNEED) < 0 &&
		    populate && errno == EINVAL) {
			populate = false; /* before Linux 5.14: read-ahead only */
			(void)madvise(p, len, MADV_WILLNEED);
		}
		if (populate)
			stats.written += w.r[i].pages;
	}
	/* Then every range read, in spans (the written pages in them are
	 * mapped already: nothing to do there). */
	for (uint32_t i = 0; i < w.count;) {
		uint64_t first, end;
		next_span(&w, &i, &first, &end);
		uint8_t *p = m->base + (size_t)first * WSREC_PAGE;
		size_t len = (size_t)(end - first) * WSREC_PAGE;
		if (madvise(p, len, populate ? MADV_POPULATE_READ : MADV_WILLNEED) < 0 &&
		    populate && errno == EINVAL) {
			populate = false;
			(void)madvise(p, len, MADV_WILLNEED);
		}
	}
	stats.ranges = w.count;
	stats.us = (uint64_t)(mono_ns() - t0) / 1000;
	wsrec_free(&kept);
	kept = w;
}

/* Pre-faults [gpa, gpa + size): 0, or -errno (a signal or a race is
 * retried a few times; what was done stays done). */
static int prefault_range(int vcpu_fd, uint64_t gpa, uint64_t size, uint64_t *done)
{
	struct kvm_pre_fault_memory pf = { .gpa = gpa, .size = size };
	int tries = 0;
	while (pf.size) {
		uint64_t before = pf.size;
		int r = ioctl(vcpu_fd, KVM_PRE_FAULT_MEMORY, &pf);
		int e = errno;
		if (pf.size > before) /* never, by the API */
			return -EIO;
		*done += before - pf.size; /* an interrupted call keeps its progress too */
		if (r < 0) {
			if ((e == EINTR || e == EAGAIN) && ++tries < 8)
				continue;
			return -e;
		}
		if (pf.size == before) /* success without progress: never, by the API; no spin */
			return -EIO;
	}
	return 0;
}

void prefetch_prefault(const struct guest_mem *m, int vm_fd, int vcpu_fd)
{
	struct wsrec w = kept;
	memset(&kept, 0, sizeof(kept));
	int64_t t0 = mono_ns();
	uint64_t done = 0;
	int r = 0;
	if (w.count && ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_PRE_FAULT_MEMORY) <= 0)
		r = -EOPNOTSUPP;
	/* Record pages index the RAM file; each region maps a slice of it.
	 * Spans, as the read-ahead's. */
	for (uint32_t i = 0; i < w.count && r == 0;) {
		uint64_t first, last;
		next_span(&w, &i, &first, &last);
		uint64_t off = first * WSREC_PAGE, end = last * WSREC_PAGE;
		for (unsigned int k = 0; k < m->nregions && r == 0; k++) {
			const struct gmem_region *g = &m->regions[k];
			uint64_t lo = off > g->offset ? off : g->offset;
			uint64_t hi = end < g->offset + g->size ? end : g->offset + g->size;
			if (lo < hi)
				r = prefault_range(vcpu_fd, g->gpa + (lo - g->offset), hi - lo,
				                   &done);
		}
	}
	stats.prefaulted = done / WSREC_PAGE;
	stats.prefault_us = done ? (uint64_t)(mono_ns() - t0) / 1000 : 0;
	stats.prefault_error = r;
	wsrec_free(&w);
}

void prefetch_get_stats(struct prefetch_stats *st)
{
	*st = stats;
}

int prefetch_record(const struct guest_mem *m, int out_fd, uint32_t *ranges, uint64_t *pages,
                    char *err, size_t errlen)
{
	if (pagemap_fd < 0)
		return errf(err, errlen, -ENOTSUP, "no working set: this VM was not restored");
	if (!m->base || m->ram_size % WSREC_PAGE)
		return errf(err, errlen, -EINVAL, "no guest memory");
	uint64_t npages = m->ram_size / WSREC_PAGE;
	uint64_t *pm = malloc(PM_CHUNK * sizeof(*pm));
	struct wsrec_range *r = malloc(WSREC_MAX_RANGES * sizeof(*r));
	uint8_t *out = malloc(WSREC_MAX_BYTES);
	uint32_t n = 0;
	uint64_t touched = 0;
	int rc = 0;
	if (!pm || !r || !out) {
		rc = errf(err, errlen, -ENOMEM, "out of memory");
		goto done;
	}
	uint64_t vpage = (uint64_t)(uintptr_t)m->base / WSREC_PAGE;
	for (uint64_t i = 0; i < npages && rc == 0; i += PM_CHUNK) {
		uint64_t k = npages - i < PM_CHUNK ? npages - i : PM_CHUNK;
		rc = pread_all(pagemap_fd, pm, k * sizeof(*pm), (off_t)((vpage + i) * sizeof(*pm)));
		if (rc < 0) {
			errf(err, errlen, rc, "reading /proc/self/pagemap: %s", strerror(-rc));
			break;
		}
		for (uint64_t j = 0; j < k; j++) {
			if (!(pm[j] & (PM_PRESENT | PM_SWAPPED)))
				continue;
			/* In a MAP_PRIVATE file mapping an anonymous page is a
			 * copy the guest's write made. */
			bool written = (pm[j] & PM_SWAPPED) || !(pm[j] & PM_FILE);
			if (!wsrec_add(r, &n, WSREC_MAX_RANGES, (uint32_t)(i + j), written)) {
				rc = errf(err, errlen, -E2BIG, "more than %u ranges",
				          WSREC_MAX_RANGES);
				break;
			}
			touched++;
		}
	}
	if (rc == 0 && n == 0)
		rc = errf(err, errlen, -ENODATA, "the guest touched no page");
	size_t len = rc == 0 ? wsrec_format(r, n, m->ram_size, out, WSREC_MAX_BYTES) : 0;
	if (rc == 0 && len == 0)
		rc = errf(err, errlen, -EINVAL, "cannot encode the record");
	if (rc == 0 && ftruncate(out_fd, 0) < 0)
		rc = errf(err, errlen, -errno, "truncating the record: %s", strerror(errno));
	if (rc == 0 && (rc = pwrite_all(out_fd, out, len, 0)) < 0)
		errf(err, errlen, rc, "writing the record: %s", strerror(-rc));
	if (rc == 0) {
		*ranges = n;
		*pages = touched;
	}
done:
	free(pm);
	free(r);
	free(out);
	return rc;
}
