/* Lifecycle events (docs/daemon.md): one function that every change of a
 * sandbox's life goes through, which writes the journal's lifecycle line,
 * keeps the event in a ring for GET /events (server-sent events, each
 * tenant sees only its own sandboxes') and hands it to the tenant's
 * webhooks (webhooks.h). */
#ifndef COVED_SANDBOXES_EVENTS_H
#define COVED_SANDBOXES_EVENTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct coved;
struct coved_sb;
struct coved_webhooks;

#define COVED_EVENTS_RING 1024 /* events kept for subscribers that fall behind */

/* coved_event() - sb's life changed: @type is one of created, paused,
 * resumed, snapshotted, forked, stopped, killed, timed_out, dead; @reason
 * says why ("requested": an API call; "idle", "timeout", "auto" (an
 * automatic resume), or a dead VMM's own words).  Any thread; call it
 * after the change is recorded. */
void coved_event(struct coved_sb *sb, const char *type, const char *reason);
/* coved_event_with() - coved_event() with more fields for the journal's
 * line and the event's "data" (@extra stolen; NULL: none). */
void coved_event_with(struct coved_sb *sb, const char *type, const char *reason, json_t *extra);

/* coved_events_init() - the ring and the webhooks' worker (before any
 * sandbox is adopted).  Return: 0 or -errno with err. */
int coved_events_init(struct coved *d, char *err, size_t errlen);
/* coved_events_close() - streams end (call before the server stops). */
void coved_events_close(struct coved *d);
/* coved_events_fini() - after the server stopped: the worker joined. */
void coved_events_fini(struct coved *d);
/* Whether coved is stopping: long streams end. */
bool coved_events_closed(struct coved *d);

/* coved_events_hooks() - the webhooks (webhooks.h), or NULL. */
struct coved_webhooks *coved_events_hooks(struct coved *d);

/* coved_events_now() - the newest event's id: a new subscriber's start. */
uint64_t coved_events_now(struct coved *d);

/* coved_events_next() - the first event after @after_id of tenant
 * @tenant, waiting up to @wait_ms for one.  *id gets its id (or, when
 * none came, the newest id looked at).  Return: the event as
 * {"id", "type", "sandboxID", "templateID", "reason", "timestamp",
 * "data"} (a new reference), or NULL. */
json_t *coved_events_next(struct coved *d, const char *tenant, uint64_t after_id, int wait_ms,
                          uint64_t *id);

#endif
