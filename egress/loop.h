/* cove-egress's single-threaded event loop: epoll for descriptors and a
 * small list of deadlines.  Every wait in cove-egress is one of these
 * timers (DNS upstreams, connects, header reads, idle splices), so nothing
 * waits forever.  Single-threaded: no locks, callbacks never block. */
#ifndef COVE_EGRESS_LOOP_H
#define COVE_EGRESS_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

struct loop;

/* A descriptor's handler; embed it and recover the owner with
 * container_of-style casts in the callback. */
struct ev {
	int fd;
	void (*fn)(struct ev *ev, uint32_t events);
};

struct timer {
	uint64_t when_ms; /* CLOCK_MONOTONIC, ms */
	void (*fn)(struct timer *t);
	struct timer *prev, *next;
	bool armed;
};

/* An object to free once the current batch of events is dispatched (an
 * event later in the batch may still point at it). */
struct loop_dead {
	struct loop_dead *next;
	void (*free)(struct loop_dead *d);
};

struct loop {
	int epfd;
	bool stop;
	struct timer *timers; /* unsorted; the caps keep it short */
	struct loop_dead *dead;
};

/* loop_defer_free() - call @d->free after this batch of events. */
void loop_defer_free(struct loop *l, struct loop_dead *d);

/* loop_init() - create the epoll instance.  0 or -errno. */
int loop_init(struct loop *l) __attribute__((warn_unused_result));
void loop_fini(struct loop *l);

/* loop_add(), loop_mod() - watch @ev->fd for @events (EPOLLIN, ...). */
int loop_add(struct loop *l, struct ev *ev, uint32_t events) __attribute__((warn_unused_result));
int loop_mod(struct loop *l, struct ev *ev, uint32_t events) __attribute__((warn_unused_result));
/* loop_del() - stop watching (call before closing the fd). */
void loop_del(struct loop *l, struct ev *ev);

/* timer_arm() - fire @t->fn once, @ms from now (re-arming moves it). */
void timer_arm(struct loop *l, struct timer *t, uint64_t ms);
void timer_cancel(struct loop *l, struct timer *t);

uint64_t loop_now_ms(void);

/* loop_run() - dispatch until l->stop.  0, or -errno if epoll fails.
 * #syscalls: epoll_wait clock_gettime */
int loop_run(struct loop *l);

#endif
