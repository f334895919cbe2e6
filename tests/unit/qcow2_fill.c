/* Writes into qcow2 overlays for unit tests (qcow2_fill.h). */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "backend/disk_qcow2.h"
#include "qcow2_fill.h"

void qcow2_fill_write(const char *path, uint64_t off, const void *buf, size_t len)
{
	char err[256] = "";
	struct disk *d = NULL;
	int r = disk_qcow2_open(path, false, &d, err, sizeof(err));
	ck_assert_msg(r == 0, "open %s: %s", path, err);
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };
	ck_assert_int_eq(d->ops->write(d, off, &v, 1), 0);
	ck_assert_int_eq(d->ops->flush(d), 0);
	d->ops->close(d);
}

unsigned int qcow2_fill_diff(const char *overlay, const char *base, const char *changed)
{
	enum { RUN = 65536 };
	int a = open(base, O_RDONLY), b = open(changed, O_RDONLY);
	ck_assert(a >= 0 && b >= 0);
	char err[256] = "";
	struct disk *d = NULL;
	int r = disk_qcow2_open(overlay, false, &d, err, sizeof(err));
	ck_assert_msg(r == 0, "open %s: %s", overlay, err);
	uint8_t *x = malloc(RUN), *y = malloc(RUN);
	ck_assert(x && y);
	unsigned int n = 0;
	for (off_t off = 0;; off += RUN) {
		ssize_t ny = pread(b, y, RUN, off);
		if (ny <= 0)
			break;
		ssize_t nx = pread(a, x, (size_t)ny, off);
		if (nx == ny && !memcmp(x, y, (size_t)ny))
			continue;
		struct iovec v = { .iov_base = y, .iov_len = (size_t)ny };
		ck_assert_int_eq(d->ops->write(d, (uint64_t)off, &v, 1), 0);
		n++;
	}
	ck_assert_int_eq(d->ops->flush(d), 0);
	d->ops->close(d);
	free(x);
	free(y);
	close(a);
	close(b);
	return n;
}
