#include "base/evloop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

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
	l->stop_fd = -1;
	pthread_mutex_init(&l->lock, NULL);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0)
		return -errno;
	l->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (l->stop_fd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->stop_fd, &ev) < 0) {
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
	int err = pthread_create(&l->thread, NULL, evloop_thread, l);
	if (err)
		return -err;
	l->running = true;
	return 0;
}

void evloop_stop(struct evloop *l)
{
	if (!l->running)
		return;
	uint64_t one = 1;
	if (write(l->stop_fd, &one, sizeof(one)) == sizeof(one))
		pthread_join(l->thread, NULL);
	l->running = false;
}

void evloop_destroy(struct evloop *l)
{
	evloop_stop(l);
	free_list(&l->watches);
	free_list(&l->graveyard);
	if (l->stop_fd >= 0)
		close(l->stop_fd);
	if (l->epfd >= 0)
		close(l->epfd);
	l->stop_fd = l->epfd = -1;
	pthread_mutex_destroy(&l->lock);
}
