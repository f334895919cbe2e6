/* Directory watches (watch.c, docs/protocol.md "Watches"): PROTO_WATCH
 * answers OK {"id"}, then streams PROTO_WATCH_EVENT frames on its
 * connection from inotify until the host closes it.  A recursive watch
 * follows folders made (or moved in) after it began. */
#ifndef COVE_AGENT_WATCH_H
#define COVE_AGENT_WATCH_H

#include <stdint.h>

#include "conn.h"
#include "request.h"

#define WATCH_DIRS_MAX   4096 /* folders one watch follows */
#define WATCH_ACTIVE_MAX 32   /* watches open in the agent at once */
#define WATCH_DEPTH_MAX  64   /* folder levels below the watched one */

/* Request handler: 0 when the watch ended with the host's close (or was
 * refused with ERROR), negative errno when the connection must close.
 * The watch ends with an ERROR frame when its folder goes away, it would
 * follow more than WATCH_DIRS_MAX folders, or inotify lost events. */
int agent_watch(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));

/* The event type of an inotify mask (the names fsnotify, which E2B's envd
 * uses, gives them): "create", "write", "remove", "rename", "chmod", or
 * NULL for one that is not reported (IN_OPEN, IN_IGNORED, ...). */
const char *agent_watch_type(uint32_t mask);

#endif
