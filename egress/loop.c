#include "loop.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define LOOP_BATCH 64

uint64_t loop_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int loop_init(struct loop *l)
{
	memset(l, 0, sizeof(*l));
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	return l->epfd < 0 ? -errno : 0;
}

void loop_fini(struct loop *l)
{
	if (l->epfd >= 0)
		close(l->epfd);
	l->epfd = -1;
}

int loop_add(struct loop *l, struct ev *ev, uint32_t events)
{
	struct epoll_event e = { .events = events, .data.ptr = ev };
	return epoll_ctl(l->epfd, EPOLL_CTL_ADD, ev->fd, &e) ? -errno : 0;
}

int loop_mod(struct loop *l, struct ev *ev, uint32_t events)
{
	struct epoll_event e = { .events = events, .data.ptr = ev };
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, ev->fd, &e) ? -errno : 0;
}

void loop_del(struct loop *l, struct ev *ev)
{
	if (ev->fd >= 0)
		epoll_ctl(l->epfd, EPOLL_CTL_DEL, ev->fd, NULL);
}

void timer_cancel(struct loop *l, struct timer *t)
{
	if (!t->armed)
		return;
	if (t->prev)
		t->prev->next = t->next;
	else
		l->timers = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
	t->armed = false;
}

void timer_arm(struct loop *l, struct timer *t, uint64_t ms)
{
	timer_cancel(l, t);
	t->when_ms = loop_now_ms() + ms;
	t->prev = NULL;
	t->next = l->timers;
	if (l->timers)
		l->timers->prev = t;
	l->timers = t;
	t->armed = true;
}

/* Fires every due timer; returns the ms until the next one, or -1. */
static int run_timers(struct loop *l)
{
	for (;;) {
		uint64_t now = loop_now_ms();
		struct timer *due = NULL;
		uint64_t next = UINT64_MAX;
		for (struct timer *t = l->timers; t; t = t->next) {
			if (t->when_ms <= now) {
				due = t;
				break;
			}
			if (t->when_ms < next)
				next = t->when_ms;
		}
		if (!due)
			return next == UINT64_MAX ? -1
			                          : (int)(next - now > 60000 ? 60000 : next - now);
		/* The callback may free the timer's owner: unlink first. */
		timer_cancel(l, due);
		due->fn(due);
	}
}

void loop_defer_free(struct loop *l, struct loop_dead *d)
{
	d->next = l->dead;
	l->dead = d;
}

static void reap(struct loop *l)
{
	while (l->dead) {
		struct loop_dead *d = l->dead;
		l->dead = d->next;
		d->free(d);
	}
}

int loop_run(struct loop *l)
{
	struct epoll_event evs[LOOP_BATCH];
	while (!l->stop) {
		int wait = run_timers(l);
		reap(l);
		if (l->stop)
			break;
		int n = epoll_wait(l->epfd, evs, LOOP_BATCH, wait);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !l->stop; i++) {
			struct ev *ev = evs[i].data.ptr;
			ev->fn(ev, evs[i].events);
		}
		reap(l);
	}
	return 0;
}
