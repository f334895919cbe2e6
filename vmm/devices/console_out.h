/* Where the serial console's output goes: buffered (one write per line,
 * per full buffer, or when a short timer fires after a partial line, not
 * one per guest byte) and, for a console file the VMM opened itself,
 * capped: when the file would pass its cap, the older part is dropped and
 * the newest half (from a line start) moved to the front through the fd,
 * with pread/pwrite and ftruncate (the file may be on tmpfs, and a jailed
 * VMM cannot reach its path to rotate it by name).
 *
 * Not thread-safe: the serial device calls it under its lock. */
#ifndef COVE_CONSOLE_OUT_H
#define COVE_CONSOLE_OUT_H

#include <stdbool.h>
#include <stdint.h>

#define CONSOLE_OUT_BUF      4096
#define CONSOLE_OUT_FLUSH_MS 25 /* a partial line waits at most this long */

struct console_out {
	int fd;           /* -1: output discarded */
	uint64_t cap;     /* 0: plain write()s (stdio, pipes); else the file's cap */
	uint64_t size;    /* bytes in the capped file (we are its one writer) */
	uint64_t dropped; /* bytes rotated out of the capped file */
	int timer_fd;     /* one-shot timerfd for partial lines; -1: none */
	bool timer_armed;
	uint32_t len;
	uint8_t buf[CONSOLE_OUT_BUF];
};

/* Output to fd (-1: none).  cap > 0 only for a regular file opened for
 * this console alone (no O_APPEND, truncated): it then stays at most cap
 * bytes (cap >= 2 * CONSOLE_OUT_BUF).  timer_fd (or -1) is armed for
 * CONSOLE_OUT_FLUSH_MS when a partial line is buffered; its owner calls
 * console_out_timer() when it fires. */
void console_out_init(struct console_out *o, int fd, uint64_t cap, int timer_fd);

/* Buffers one byte; writes out on a newline or a full buffer. */
void console_out_put(struct console_out *o, uint8_t c);

/* Writes out what is buffered. */
void console_out_flush(struct console_out *o);

/* The flush timer fired: writes out the partial line. */
void console_out_timer(struct console_out *o);

#endif
