#include "base/evloop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

struct evloop_watch {
	int fd;
	bool dead; /* removed; freed once the current batch is done */
	evloop_fn fn;
	void *opaque;
	struct evloop_watch *next;
};

static void free_list(struct evloop_watch **head)
{
	while (*head) {
		struct evloop_watch *w = *head;
		*head = w->next;
		free(w);
	}
}

int evloop_init(struct evloop *l)
{
	l->running = false;
	l->watches = NULL;
	l->graveyard = NULL;
	l->stop_fd = l->park_fd = -1;
	l->park_requested = l->parked = l->stopping = false;
	l->seccomp = VMM_SECCOMP_OFF;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->park_cond, &ca);
	pthread_condattr_destroy(&ca);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		return -errno;
	l->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	l->park_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	/* The two control eventfds are told apart by their data: NULL stops,
	 * the loop itself parks. */
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct epoll_event pev = { .events = EPOLLIN, .data.ptr = l };
	if (l->stop_fd < 0 || l->park_fd < 0 ||
	    epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->stop_fd, &ev) < 0 ||
	    epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->park_fd, &pev) < 0) {
		int err = -errno;
		evloop_destroy(l);
		return err;
	}
	return 0;
}

int evloop_add(struct evloop *l, int fd, uint32_t events, evloop_fn fn, void *opaque)
{
	struct evloop_watch *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct evloop_watch){ .fd = fd, .fn = fn, .opaque = opaque };
	struct epoll_event ev = { .events = events, .data.ptr = w };
	pthread_mutex_lock(&l->lock);
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;
		pthread_mutex_unlock(&l->lock);
		free(w);
		return err;
	}
	w->next = l->watches;
	l->watches = w;
	pthread_mutex_unlock(&l->lock);
	return 0;
}

int evloop_mod(struct evloop *l, int fd, uint32_t events)
{
	int ret = -ENOENT;
	pthread_mutex_lock(&l->lock);
	for (struct evloop_watch *w = l->watches; w; w = w->next) {
		if (w->fd != fd)
			continue;
		struct epoll_event ev = { .events = events, .data.ptr = w };
		ret = epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
		break;
	}
	pthread_mutex_unlock(&l->lock);
	return ret;
}

int evloop_del(struct evloop *l, int fd)
{
	int ret = -ENOENT;
	pthread_mutex_lock(&l->lock);
	for (struct evloop_watch **pp = &l->watches; *pp; pp = &(*pp)->next) {
		struct evloop_watch *w = *pp;
		if (w->fd != fd)
			continue;
		(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
		*pp = w->next;
		/* A later event of the current batch may still point at it. */
		w->dead = true;
		w->next = l->graveyard;
		l->graveyard = w;
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&l->lock);
	return ret;
}

/* On the loop thread, between callbacks: waits while a park is asked for. */
static void park_here(struct evloop *l)
{
	uint64_t n;
	(void)read(l->park_fd, &n, sizeof(n));
	pthread_mutex_lock(&l->lock);
	if (l->park_requested && !l->stopping) {
		l->parked = true;
		pthread_cond_broadcast(&l->park_cond);
		while (l->park_requested && !l->stopping)
			pthread_cond_wait(&l->park_cond, &l->lock);
		l->parked = false;
		pthread_cond_broadcast(&l->park_cond);
	}
	pthread_mutex_unlock(&l->lock);
}

int evloop_run_once(struct evloop *l, int timeout_ms)
{
	struct epoll_event evs[32];
	int n = epoll_wait(l->epfd, evs, 32, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	int ran = 0;
	for (int i = 0; i < n; i++) {
		struct evloop_watch *w = evs[i].data.ptr;
		if (!w) {
			ran = -ECANCELED; /* the stop eventfd */
			break;
		}
		if ((void *)w == (void *)l) {
			park_here(l);
			continue;
		}
		if (w->dead)
			continue;
		w->fn(w->opaque, evs[i].events);
		ran++;
	}
	pthread_mutex_lock(&l->lock);
	free_list(&l->graveyard);
	pthread_mutex_unlock(&l->lock);
	return ran;
}

static void *evloop_thread(void *arg)
{
	struct evloop *l = arg;
	while (evloop_run_once(l, -1) >= 0)
		;
	return NULL;
}

int evloop_start(struct evloop *l)
{
	char err[256];
	pthread_mutex_lock(&l->lock);
	l->stopping = false;
	pthread_mutex_unlock(&l->lock);
	int r = vmm_seccomp_thread_start(&l->thread, "io", VMM_THREAD_IO, l->seccomp, evloop_thread,
	                                 l, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "cove-vmm: %s\n", err);
		return r;
	}
	l->running = true;
	return 0;
}

void evloop_stop(struct evloop *l)
{
	if (!l->running)
		return;
	pthread_mutex_lock(&l->lock);
	l->stopping = true;
	pthread_cond_broadcast(&l->park_cond);
	pthread_mutex_unlock(&l->lock);
	uint64_t one = 1;
	if (write(l->stop_fd, &one, sizeof(one)) == sizeof(one))
		pthread_join(l->thread, NULL);
	l->running = false;
}

static struct timespec deadline_in(int ms)
{
	return clock_after_ms(CLOCK_MONOTONIC, ms);
}

int evloop_park(struct evloop *l, int timeout_ms)
{
	if (!l->running)
		return 0;
	pthread_mutex_lock(&l->lock);
	if (l->park_requested || l->parked) {
		pthread_mutex_unlock(&l->lock);
		return -EBUSY;
	}
	if (l->stopping) {
		pthread_mutex_unlock(&l->lock);
		return -ECANCELED;
	}
	l->park_requested = true;
	pthread_mutex_unlock(&l->lock);
	uint64_t one = 1;
	int r = write(l->park_fd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
	struct timespec until = deadline_in(timeout_ms);
	pthread_mutex_lock(&l->lock);
	while (r == 0 && !l->parked && !l->stopping)
		r = -pthread_cond_timedwait(&l->park_cond, &l->lock, &until);
	if (r == 0 && l->stopping)
		r = -ECANCELED;
	if (r < 0) {
		/* The loop will see the eventfd later and not stop for it. */
		l->park_requested = false;
		pthread_cond_broadcast(&l->park_cond);
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}

void evloop_unpark(struct evloop *l)
{
	pthread_mutex_lock(&l->lock);
	l->park_requested = false;
	pthread_cond_broadcast(&l->park_cond);
	pthread_mutex_unlock(&l->lock);
}

void evloop_destroy(struct evloop *l)
{
	evloop_stop(l);
	free_list(&l->watches);
	free_list(&l->graveyard);
	if (l->stop_fd >= 0)
		close(l->stop_fd);
	if (l->park_fd >= 0)
		close(l->park_fd);
	if (l->epfd >= 0)
		close(l->epfd);
	l->stop_fd = l->park_fd = l->epfd = -1;
	pthread_cond_destroy(&l->park_cond);
	pthread_mutex_destroy(&l->lock);
}
