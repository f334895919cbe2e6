/* Directory watches in the guest (watch.c; part of cove.h's API): one
 * agent connection per watch, PROTO_WATCH's events read from it until the
 * caller closes it (docs/protocol.md "Watches"). */
#ifndef COVE_LIB_AGENT_WATCH_H
#define COVE_LIB_AGENT_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cove_sandbox;

enum cove_watch_kind {
	COVE_WATCH_IDLE = 0, /* nothing within the wait */
	COVE_WATCH_CREATE,
	COVE_WATCH_WRITE,
	COVE_WATCH_REMOVE,
	COVE_WATCH_RENAME,
	COVE_WATCH_CHMOD,
};

struct cove_watch_event {
	enum cove_watch_kind kind;
	char *name; /* malloc'ed: relative to the watched folder; NULL when idle */
};

/* Starts watching the guest folder path (absolute), with the folders
 * under it when recursive: returns the connection's fd (the caller closes
 * it, which ends the watch) once the agent said OK, or -errno (-ENOENT,
 * -ENOTDIR, -EMFILE when the agent has too many watches). */
int cove_watch_begin(struct cove_sandbox *sb, const char *path, bool recursive, char *err,
                     size_t errlen) __attribute__((warn_unused_result));
/* cove_watch_begin on a connection already open (fd), within AGENT_STEP_MS. */
int cove_watch_on(int fd, const char *path, bool recursive, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The next event: waits up to wait_ms for one to begin (COVE_WATCH_IDLE
 * when none did: call again), then AGENT_STEP_MS for the rest of its
 * frame.  -errno when the watch ended (the agent's ERROR, with its
 * message: the folder went away, events were lost) or broke; close the fd
 * then.  Free each event's name with cove_watch_event_free. */
int cove_watch_next(int fd, int wait_ms, struct cove_watch_event *ev, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void cove_watch_event_free(struct cove_watch_event *ev);

/* A WATCH_EVENT payload (guest input): {"name": relative path, not empty,
 * under PATH_MAX bytes, no NUL, not absolute, "type": one of the five}.
 * Pure; -EPROTO with a reason. */
int cove_watch_event_parse(const uint8_t *payload, size_t len, struct cove_watch_event *ev,
                           char *err, size_t errlen) __attribute__((warn_unused_result));
/* "create", "write", "remove", "rename", "chmod" ("" for idle). */
const char *cove_watch_kind_name(enum cove_watch_kind k);

#endif
