/* libFuzzer target: hostile qcow2 images.  The input is the image file.
 * It is opened writable from a memfd (backing files refused, so an input
 * cannot name host files), read, written, zeroed and discarded at places
 * derived from the input, closed, then opened again read-only and read:
 * whatever the metadata says, requests may fail but nothing may crash,
 * hang or leak.  An input that names no backing file also goes through
 * the host's read-only chain reader (common/qcow2_read.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend/disk_open.h"
#include "backend/disk_qcow2.h"
#include "qcow2_read.h"

#define MAX_REQ 70000 /* a little over one 64 KiB cluster */
#define OPS     8

static uint8_t g_buf[MAX_REQ];

/* Deterministic per input: an FNV-1a hash of it, then xorshift. */
static uint64_t g_x;

static uint64_t next(void)
{
	g_x ^= g_x << 13;
	g_x ^= g_x >> 7;
	g_x ^= g_x << 17;
	return g_x;
}

static void seed(const uint8_t *data, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 0x100000001b3ULL;
	g_x = h | 1;
}

/* A request inside the disk: *len 0 when the disk is empty. */
static uint64_t pick(const struct disk *d, size_t *len)
{
	*len = 0;
	if (!d->size)
		return 0;
	uint64_t x = next();
	uint64_t off = (x & 1) ? (x >> 1) % d->size
	                       : (x >> 1) % (d->size < 4 * MAX_REQ ? d->size : 4 * MAX_REQ);
	uint64_t room = d->size - off;
	*len = 1 + (size_t)(next() % MAX_REQ);
	if (*len > room)
		*len = (size_t)room;
	return off;
}

static void exercise(struct disk *d, bool writes)
{
	for (int i = 0; i < OPS; i++) {
		size_t len;
		uint64_t off = pick(d, &len);
		struct iovec v[2] = {
			{ .iov_base = g_buf, .iov_len = len / 3 },
			{ .iov_base = g_buf + len / 3, .iov_len = len - len / 3 },
		};
		unsigned int op = writes ? (unsigned int)(next() % 5) : 0;
		int r = 0;
		if (op == 0 || op == 1) {
			r = disk_read(d, off, v, 2);
		} else if (op == 2) {
			memset(g_buf, (int)i + 1, len);
			r = disk_write(d, off, v, 2);
		} else if (op == 3) {
			r = disk_write_zeroes(d, off, len, next() & 1);
		} else {
			r = disk_discard(d, off, len);
		}
		(void)r; /* failures are fine; crashes are not */
	}
	if (writes)
		(void)disk_flush(d);
}

static int count_run(void *arg, uint64_t off, uint64_t len)
{
	(void)off;
	*(uint64_t *)arg += len;
	return 0;
}

/* The chain reader on the input as given: its allocations and a few reads. */
static void exercise_reader(const char *path)
{
	char err[256];
	struct qcow2_chain *c;
	if (qcow2_chain_open(path, &c, err, sizeof(err)))
		return;
	uint64_t total = 0, size = qcow2_chain_size(c, 0);
	(void)qcow2_chain_allocated(c, 0, count_run, &total, err, sizeof(err));
	for (int i = 0; i < OPS && size; i++) {
		uint64_t off = next() % size;
		size_t len = 1 + (size_t)(next() % MAX_REQ);
		(void)qcow2_chain_read(c, 0, g_buf, len, off, err, sizeof(err));
	}
	qcow2_chain_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-qcow2", MFD_CLOEXEC);
	if (fd < 0)
		abort(); /* the harness, not the backend */
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	seed(data, size);
	const unsigned int flags = QCOW2_OPEN_NO_BACKING | QCOW2_OPEN_QUIET;
	char err[256];
	struct disk *d;
	static const uint8_t none[8];
	if (size >= 16 && !memcmp(data + 8, none, 8))
		exercise_reader(path);
	if (disk_qcow2_open_flags(path, false, flags, &d, err, sizeof(err)) == 0) {
		exercise(d, true);
		disk_close(d);
		/* What the writes left must open (or be refused) cleanly too. */
		if (disk_qcow2_open_flags(path, true, flags, &d, err, sizeof(err)) == 0) {
			exercise(d, false);
			disk_close(d);
		}
	}
	close(fd);
	return 0;
}
