/* The VMM's I/O event loop: one epoll thread per VM that runs device work
 * (virtqueue notifications arriving on ioeventfds, console input, backend
 * completions) off the vCPU threads.  Callbacks run on the loop thread, one
 * at a time. */
#ifndef COVE_EVLOOP_H
#define COVE_EVLOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/seccomp.h"

typedef void (*evloop_fn)(void *opaque, uint32_t events);

struct evloop_watch;

struct evloop {
	int epfd;
	int stop_fd; /* eventfd that wakes the loop to stop */
	int park_fd; /* eventfd through which evloop_park() asks the loop to wait */
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;           /* guards watches and the park fields */
	pthread_cond_t park_cond;       /* signals every change of the park fields */
	bool park_requested;            /* evloop_park() until evloop_unpark() */
	bool parked;                    /* the loop thread waits in park_cond */
	bool stopping;                  /* evloop_stop(): a parked loop ends too */
	struct evloop_watch *watches;   /* every record, for evloop_del and destroy */
	struct evloop_watch *graveyard; /* deleted during a batch, freed after it */
	/* The loop thread's seccomp filter (VMM_THREAD_IO); OFF after
	 * evloop_init(), set it before evloop_start(). */
	enum vmm_seccomp_mode seccomp;
};

/* Creates the epoll set; no thread yet.  Returns 0 or -errno. */
int evloop_init(struct evloop *l) __attribute__((warn_unused_result));

/* Watches fd for events (EPOLLIN etc.); fn(opaque, events) runs on the loop
 * thread.  May be called before or after evloop_start().  The caller keeps
 * fd open until evloop_del() or evloop_destroy(). */
int evloop_add(struct evloop *l, int fd, uint32_t events, evloop_fn fn, void *opaque)
    __attribute__((warn_unused_result));
/* Changes the events fd is watched for (0: none for now, the watch stays),
 * as epoll's level-triggered MOD: a device stops reading a backend it has
 * no room for and starts again later.  Any thread.  0, -ENOENT or -errno. */
int evloop_mod(struct evloop *l, int fd, uint32_t events) __attribute__((warn_unused_result));
/* Stops watching fd.  Call it from a loop callback (any fd's, even for an
 * fd whose event is still pending in the current batch: its callback will
 * not run) or with the loop stopped. */
int evloop_del(struct evloop *l, int fd);

/* Starts the loop thread, named "io", which installs the I/O thread's
 * seccomp filter (l->seccomp) before it runs anything.  Returns 0 or
 * -errno (the filter could not be installed: the thread has ended). */
int evloop_start(struct evloop *l) __attribute__((warn_unused_result));

/**
 * evloop_park() - make the loop thread wait between two callbacks
 * @l:		a started loop
 * @timeout_ms:	how long to wait for the loop to get there
 *
 * For work that must not overlap any loop callback (a snapshot swaps the
 * disks under the devices): asks through an eventfd, and returns once the
 * loop thread acknowledged and waits, until evloop_unpark().  Callbacks
 * ahead of the request in the current batch run first.  Call from any
 * thread but the loop's; one parker at a time.  Without a loop thread it
 * returns 0 at once (nothing can run).
 * Return: 0, -ETIMEDOUT (the loop is busy: not parked), -EBUSY (parked by
 * someone else) or -ECANCELED (the loop is stopping).
 */
int evloop_park(struct evloop *l, int timeout_ms) __attribute__((warn_unused_result));
/* Lets a parked loop go on; a no-op if it is not parked. */
void evloop_unpark(struct evloop *l);

/* Stops and joins the thread (if started); watches stay registered. */
void evloop_stop(struct evloop *l);

/* Stops and joins the thread (if started), frees watch records and closes
 * the epoll set.  Safe after a failed evloop_init(). */
void evloop_destroy(struct evloop *l);

/* Runs one round of the loop on the calling thread, waiting at most
 * timeout_ms; for tests and for single-threaded use.  Returns the number of
 * callbacks run or -errno. */
int evloop_run_once(struct evloop *l, int timeout_ms);

#endif
