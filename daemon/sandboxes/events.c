/* Lifecycle events: the ring behind GET /events and the hand-off to the
 * webhooks (events.h).  Subscribers wait on one condition variable with a
 * deadline; each event is kept as text with its tenant, so a reader
 * filters without touching the sandbox. */
#include "daemon/sandboxes/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "common/errf.h"
#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/webhooks.h"

struct ev_slot {
	uint64_t id;
	char tenant[COVED_TENANT_LEN + 1];
	json_t *ev;
};

struct coved_events {
	pthread_mutex_t mu;
	pthread_cond_t grew; /* CLOCK_MONOTONIC */
	struct ev_slot ring[COVED_EVENTS_RING];
	uint64_t last_id; /* ids count from 1; slot id % RING */
	bool closed;
	struct coved_webhooks *hooks;
};

int coved_events_init(struct coved *d, char *err, size_t errlen)
{
	struct coved_events *e = calloc(1, sizeof(*e));
	if (!e)
		return errf(err, errlen, -ENOMEM, "out of memory");
	pthread_mutex_init(&e->mu, NULL);
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&e->grew, &a);
	pthread_condattr_destroy(&a);
	/* Ids stay increasing across restarts: a client's Last-Event-ID from
	 * an earlier coved is older than every new event. */
	e->last_id = (uint64_t)wall_ms() * 1000;
	int r = coved_webhooks_start(d, &e->hooks, err, errlen);
	if (r < 0) {
		pthread_mutex_destroy(&e->mu);
		pthread_cond_destroy(&e->grew);
		free(e);
		return r;
	}
	d->events = e;
	return 0;
}

void coved_events_close(struct coved *d)
{
	struct coved_events *e = d->events;
	if (!e)
		return;
	pthread_mutex_lock(&e->mu);
	e->closed = true;
	pthread_cond_broadcast(&e->grew);
	pthread_mutex_unlock(&e->mu);
}

bool coved_events_closed(struct coved *d)
{
	struct coved_events *e = d->events;
	if (!e)
		return false;
	pthread_mutex_lock(&e->mu);
	bool c = e->closed;
	pthread_mutex_unlock(&e->mu);
	return c;
}

void coved_events_fini(struct coved *d)
{
	struct coved_events *e = d->events;
	if (!e)
		return;
	coved_webhooks_stop(e->hooks);
	d->events = NULL;
	for (size_t i = 0; i < COVED_EVENTS_RING; i++)
		json_decref(e->ring[i].ev);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->grew);
	free(e);
}

void coved_event_with(struct coved_sb *sb, const char *type, const char *reason, json_t *extra)
{
	if (!json_is_object(extra)) {
		json_decref(extra);
		extra = json_object();
	}
	if (!reason)
		reason = "requested";
	/* The journal's line: {"type": "lifecycle", "event", "reason", ...}. */
	json_t *line = json_deep_copy(extra);
	if (line) {
		json_object_set_new(line, "type", json_string("lifecycle"));
		json_object_set_new(line, "event", json_string(type));
		json_object_set_new(line, "reason", json_string(reason));
		coved_journal(sb, line);
	}
	struct coved_events *e = sb->d->events;
	if (!e) {
		json_decref(extra);
		return;
	}
	char ts[48], tenant[COVED_TENANT_LEN + 1];
	clock_rfc3339(wall_ms(), ts, sizeof(ts));
	pthread_mutex_lock(&sb->mu);
	json_t *ev = json_pack("{s:s, s:s, s:s?, s:s, s:s, s:o}", "type", type, "sandboxID", sb->id,
	                       "templateID", sb->template_id, "reason", reason, "timestamp", ts,
	                       "data", extra);
	snprintf(tenant, sizeof(tenant), "%s", sb->tenant);
	pthread_mutex_unlock(&sb->mu);
	if (!ev)
		return;
	pthread_mutex_lock(&e->mu);
	uint64_t id = ++e->last_id;
	json_object_set_new(ev, "id", json_integer((json_int_t)id));
	struct ev_slot *s = &e->ring[id % COVED_EVENTS_RING];
	json_decref(s->ev);
	s->id = id;
	s->ev = json_incref(ev);
	snprintf(s->tenant, sizeof(s->tenant), "%s", tenant);
	pthread_cond_broadcast(&e->grew);
	pthread_mutex_unlock(&e->mu);
	coved_webhooks_post(e->hooks, tenant, type, ev);
	json_decref(ev);
}

void coved_event(struct coved_sb *sb, const char *type, const char *reason)
{
	coved_event_with(sb, type, reason, NULL);
}

/* The first of the tenant's events after *after (which moves past every
 * event looked at).  Called with e->mu. */
static json_t *scan(struct coved_events *e, const char *tenant, uint64_t *after)
{
	uint64_t oldest = e->last_id >= COVED_EVENTS_RING ? e->last_id - COVED_EVENTS_RING + 1 : 1;
	if (*after + 1 < oldest)
		*after = oldest - 1; /* fell behind the ring: those are gone */
	if (*after > e->last_id)
		*after = e->last_id; /* an id from nowhere: from now on */
	while (*after < e->last_id) {
		struct ev_slot *s = &e->ring[++*after % COVED_EVENTS_RING];
		if (s->id == *after && s->ev && strcmp(s->tenant, tenant) == 0)
			return json_incref(s->ev);
	}
	return NULL;
}

struct coved_webhooks *coved_events_hooks(struct coved *d)
{
	return d->events ? d->events->hooks : NULL;
}

uint64_t coved_events_now(struct coved *d)
{
	struct coved_events *e = d->events;
	if (!e)
		return 0;
	pthread_mutex_lock(&e->mu);
	uint64_t id = e->last_id;
	pthread_mutex_unlock(&e->mu);
	return id;
}

json_t *coved_events_next(struct coved *d, const char *tenant, uint64_t after_id, int wait_ms,
                          uint64_t *id)
{
	struct coved_events *e = d->events;
	*id = after_id;
	if (!e)
		return NULL;
	struct timespec until = clock_after_ms(CLOCK_MONOTONIC, wait_ms);
	pthread_mutex_lock(&e->mu);
	json_t *ev = NULL;
	while (!(ev = scan(e, tenant, id)) && !e->closed)
		if (pthread_cond_timedwait(&e->grew, &e->mu, &until) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&e->mu);
	return ev;
}
