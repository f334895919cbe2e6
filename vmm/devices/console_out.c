#include "devices/console_out.h"

#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

void console_out_init(struct console_out *o, int fd, uint64_t cap, int timer_fd)
{
	memset(o, 0, sizeof(*o));
	o->fd = fd;
	o->cap = cap && cap < 2 * CONSOLE_OUT_BUF ? 2 * CONSOLE_OUT_BUF : cap;
	o->timer_fd = timer_fd;
}

/* All of buf, or give up: a console that went away (a closed pipe, a
 * full disk) just drops output. */
static void write_plain(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		/* #syscalls: write (vCPU threads and the I/O thread, the console) */
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static int pio(int fd, void *buf, size_t len, uint64_t off, bool wr)
{
	uint8_t *p = buf;
	while (len) {
		/* #syscalls: pread64 pwrite64 (vCPU threads and the I/O thread) */
		ssize_t n = wr ? pwrite(fd, p, len, (off_t)off) : pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Makes room for `incoming` bytes: keeps the newest part of the file, at
 * most cap / 2 bytes of it together with what comes, starting at a line
 * start when one is near, moved to the front. */
static void rotate(struct console_out *o, uint64_t incoming)
{
	uint64_t keep = o->cap / 2 - incoming; /* incoming <= CONSOLE_OUT_BUF <= cap / 2 */
	uint64_t src = o->size > keep ? o->size - keep : 0;
	uint8_t chunk[CONSOLE_OUT_BUF];
	/* Start after the first newline within a chunk of src, if any. */
	size_t n = (size_t)(o->size - src < sizeof(chunk) ? o->size - src : sizeof(chunk));
	if (n && pio(o->fd, chunk, n, src, false) == 0) {
		uint8_t *nl = memchr(chunk, '\n', n);
		if (nl)
			src += (uint64_t)(nl - chunk) + 1;
	}
	uint64_t dst = 0;
	for (uint64_t from = src; from < o->size;) {
		size_t len =
		    (size_t)(o->size - from < sizeof(chunk) ? o->size - from : sizeof(chunk));
		if (pio(o->fd, chunk, len, from, false) < 0 ||
		    pio(o->fd, chunk, len, dst, true) < 0)
			break; /* what was moved so far stays */
		from += len;
		dst += len;
	}
	/* #syscalls: ftruncate (vCPU threads and the I/O thread) */
	if (ftruncate(o->fd, (off_t)dst) < 0)
		return;
	o->dropped += o->size - dst;
	o->size = dst;
}

void console_out_flush(struct console_out *o)
{
	uint32_t len = o->len;
	o->len = 0;
	if (!len || o->fd < 0)
		return;
	if (!o->cap) {
		write_plain(o->fd, o->buf, len);
		return;
	}
	if (o->size + len > o->cap)
		rotate(o, len);
	if (o->size + len <= o->cap && pio(o->fd, o->buf, len, o->size, true) == 0)
		o->size += len;
}

void console_out_put(struct console_out *o, uint8_t c)
{
	if (o->fd < 0)
		return;
	o->buf[o->len++] = c;
	if (c == '\n' || o->len == sizeof(o->buf)) {
		console_out_flush(o);
		return;
	}
	if (o->timer_fd >= 0 && !o->timer_armed) {
		struct itimerspec its = { .it_value = { .tv_nsec =
			                                    CONSOLE_OUT_FLUSH_MS * 1000000L } };
		/* #syscalls: timerfd_settime (vCPU threads, once per partial line) */
		o->timer_armed = timerfd_settime(o->timer_fd, 0, &its, NULL) == 0;
	}
}

void console_out_timer(struct console_out *o)
{
	o->timer_armed = false;
	console_out_flush(o);
}
