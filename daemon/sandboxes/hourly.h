/* coved's last hour, per tenant (hourly.c), for the console's overview
 * (GET /sandboxes/hour, docs/api.md): creates and egress denials by minute,
 * and the time from a create's request to its sandbox's first command
 * (p50, p99).  Fed by the journal: every line a sandbox's journal takes
 * passes coved_hourly_line(), so nothing else needs a hook.  Kept in
 * memory only: a restarted coved starts a new hour. */
#ifndef COVED_SANDBOXES_HOURLY_H
#define COVED_SANDBOXES_HOURLY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define COVED_HOUR_MINUTES 60
#define COVED_HOUR_LAT_MAX 2048 /* first-exec times kept (the newest) */

struct coved;
struct coved_sb;

struct coved_hour_minute {
	int64_t minute; /* since the epoch; a slot of another minute is stale */
	uint32_t creates, denials;
};

/* One tenant's hour.  Pure: the caller serialises. */
struct coved_hour {
	struct coved_hour_minute m[COVED_HOUR_MINUTES]; /* minute t at m[t % 60] */
	struct {
		int64_t t_ms;    /* when the first command started */
		uint32_t lat_ms; /* from the create's request */
	} lat[COVED_HOUR_LAT_MAX];
	size_t lat_head, lat_n; /* the oldest at lat[lat_head] */
};

/* Counts, at wall time now_ms: a create, an egress denial, a first
 * command lat_ms after its create's request. */
void coved_hour_create(struct coved_hour *h, int64_t now_ms);
void coved_hour_denial(struct coved_hour *h, int64_t now_ms);
void coved_hour_first_exec(struct coved_hour *h, int64_t now_ms, int64_t lat_ms);

/* coved_hour_json() - the hour up to now_ms (h may be NULL: an empty one):
 * {"minutes": [{"t": unix s of the minute, "creates", "egressDenied"} x 60,
 * oldest first], "creates", "egressDenied", "firstExecMs": {"n", "p50",
 * "p99"} (null percentiles when n is 0)}.  NULL on ENOMEM. */
json_t *coved_hour_json(const struct coved_hour *h, int64_t now_ms);

/* coved_hourly_line() - counts one journal line of sb's: a "created"
 * lifecycle event (its createMs dates the request), sb's first "exec"
 * after it, an "egress" decision whose verdict is deny.  Called by the
 * journal with sb's journal lock held (the first-exec mark is under it). */
void coved_hourly_line(struct coved_sb *sb, const json_t *line);

/* The hour of tenant (its own sandboxes' lines only) as coved_hour_json;
 * NULL on ENOMEM. */
json_t *coved_hourly_json(struct coved *d, const char *tenant);
/* Frees every tenant's hour (coved's exit). */
void coved_hourly_free(struct coved *d);

#endif
