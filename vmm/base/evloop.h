/* The VMM's I/O event loop: one epoll thread per VM that runs device work
 * (virtqueue notifications arriving on ioeventfds, console input, backend
 * completions) off the vCPU threads.  Callbacks run on the loop thread, one
 * at a time. */
#ifndef COVE_EVLOOP_H
#define COVE_EVLOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef void (*evloop_fn)(void *opaque, uint32_t events);

struct evloop_watch;

struct evloop {
	int epfd;
	int stop_fd; /* eventfd that wakes the loop to stop */
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;           /* guards watches */
	struct evloop_watch *watches;   /* every record, for evloop_del and destroy */
	struct evloop_watch *graveyard; /* deleted during a batch, freed after it */
};

/* Creates the epoll set; no thread yet.  Returns 0 or -errno. */
int evloop_init(struct evloop *l) __attribute__((warn_unused_result));

/* Watches fd for events (EPOLLIN etc.); fn(opaque, events) runs on the loop
 * thread.  May be called before or after evloop_start().  The caller keeps
 * fd open until evloop_del() or evloop_destroy(). */
int evloop_add(struct evloop *l, int fd, uint32_t events, evloop_fn fn, void *opaque)
    __attribute__((warn_unused_result));
/* Stops watching fd.  Call it from a loop callback (any fd's, even for an
 * fd whose event is still pending in the current batch: its callback will
 * not run) or with the loop stopped. */
int evloop_del(struct evloop *l, int fd);

/* Starts the loop thread. */
int evloop_start(struct evloop *l) __attribute__((warn_unused_result));

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
