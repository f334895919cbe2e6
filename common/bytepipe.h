/* Two stream sockets joined (bytepipe.c): what one side sends the other
 * receives, both ways, until both directions have ended.  The end of one
 * side's stream is passed on as a half-close (shutdown SHUT_WR) of the
 * other, so a request-then-answer protocol over it works.  The guest
 * agent's ports (a vsock connection to a TCP one in the guest), coved's
 * upgraded connections (a client to a sandbox's port) and `cove port` (a
 * local TCP connection to one) all run through this one loop. */
#ifndef COVE_BYTEPIPE_H
#define COVE_BYTEPIPE_H

#include <stddef.h>
#include <stdint.h>

#define BYTEPIPE_BUF (64 * 1024) /* bytes each direction holds at once */

struct bytepipe_opts {
	int idle_ms; /* no byte either way for this long: -ETIMEDOUT; 0: no limit */
	int stop_fd; /* readable or hung up: the pipe ends with -ECANCELED; -1: none
	              * (a zeroed struct must set it: 0 is a file descriptor) */
	/* Bytes already read from one side, for the other before anything
	 * else (a head's reader read past it); borrowed, may be NULL. */
	const uint8_t *to_b;
	size_t to_b_len;
	const uint8_t *to_a;
	size_t to_a_len;
};

struct bytepipe_count {
	uint64_t a_to_b, b_to_a; /* bytes passed each way, the pre-read ones included */
};

/* bytepipe_run() - copies between the stream sockets a and b (blocking or
 * not: every call is MSG_DONTWAIT, with poll between) until each side has
 * ended its stream and the other has been told (SHUT_WR).  Neither fd is
 * closed.  o may be NULL (no limit, no stop); n may be NULL.
 * Return: 0; -ETIMEDOUT past o->idle_ms; -ECANCELED when o->stop_fd fired;
 * -ENOMEM; or the -errno of a failed read or write (-ECONNRESET, -EPIPE). */
int bytepipe_run(int a, int b, const struct bytepipe_opts *o, struct bytepipe_count *n)
    __attribute__((warn_unused_result));

#endif
