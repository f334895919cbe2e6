/* coved's last hour per tenant: a ring of minutes and of first-exec times
 * (the pure part), a table of tenants, and the journal's hook. */
#include "daemon/sandboxes/hourly.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"

#define HOUR_MS (60 * 60000LL)

/* The slot of the minute of now_ms, emptied when it held an older one. */
static struct coved_hour_minute *slot(struct coved_hour *h, int64_t now_ms)
{
	int64_t minute = now_ms / 60000;
	struct coved_hour_minute *m = &h->m[minute % COVED_HOUR_MINUTES];
	if (m->minute != minute)
		*m = (struct coved_hour_minute){ .minute = minute };
	return m;
}

void coved_hour_create(struct coved_hour *h, int64_t now_ms)
{
	slot(h, now_ms)->creates++;
}

void coved_hour_denial(struct coved_hour *h, int64_t now_ms)
{
	slot(h, now_ms)->denials++;
}

void coved_hour_first_exec(struct coved_hour *h, int64_t now_ms, int64_t lat_ms)
{
	if (lat_ms < 0)
		lat_ms = 0;
	if (lat_ms > UINT32_MAX)
		lat_ms = UINT32_MAX;
	size_t i = (h->lat_head + h->lat_n) % COVED_HOUR_LAT_MAX;
	if (h->lat_n == COVED_HOUR_LAT_MAX)
		h->lat_head = (h->lat_head + 1) % COVED_HOUR_LAT_MAX;
	else
		h->lat_n++;
	h->lat[i].t_ms = now_ms;
	h->lat[i].lat_ms = (uint32_t)lat_ms;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The nearest-rank percentile p of n sorted values (n > 0). */
static uint32_t pct(const uint32_t *v, size_t n, unsigned int p)
{
	size_t rank = (n * p + 99) / 100;
	return v[rank ? rank - 1 : 0];
}

json_t *coved_hour_json(const struct coved_hour *h, int64_t now_ms)
{
	int64_t now_min = now_ms / 60000;
	json_t *minutes = json_array();
	uint64_t creates = 0, denials = 0;
	for (int64_t k = now_min - COVED_HOUR_MINUTES + 1; minutes && k <= now_min; k++) {
		const struct coved_hour_minute *m = h ? &h->m[k % COVED_HOUR_MINUTES] : NULL;
		uint32_t c = m && m->minute == k ? m->creates : 0;
		uint32_t dn = m && m->minute == k ? m->denials : 0;
		creates += c;
		denials += dn;
		json_array_append_new(minutes,
		                      json_pack("{s:I, s:i, s:i}", "t", (json_int_t)(k * 60),
		                                "creates", (int)c, "egressDenied", (int)dn));
	}
	uint32_t *v = malloc(COVED_HOUR_LAT_MAX * sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; v && h && i < h->lat_n; i++) {
		size_t j = (h->lat_head + i) % COVED_HOUR_LAT_MAX;
		if (h->lat[j].t_ms > now_ms - HOUR_MS)
			v[n++] = h->lat[j].lat_ms;
	}
	json_t *lat = NULL;
	if (v) {
		qsort(v, n, sizeof(*v), cmp_u32);
		lat = n ? json_pack("{s:I, s:I, s:I}", "n", (json_int_t)n, "p50",
		                    (json_int_t)pct(v, n, 50), "p99", (json_int_t)pct(v, n, 99))
		        : json_pack("{s:i, s:n, s:n}", "n", 0, "p50", "p99");
	}
	free(v);
	if (!minutes || !lat) {
		json_decref(minutes);
		json_decref(lat);
		return NULL;
	}
	return json_pack("{s:o, s:I, s:I, s:o}", "minutes", minutes, "creates", (json_int_t)creates,
	                 "egressDenied", (json_int_t)denials, "firstExecMs", lat);
}

/* ---- the tenants' hours ---------------------------------------------------- */

struct coved_hourly {
	struct {
		char *tenant;
		struct coved_hour *h;
	} * t;
	size_t n, cap;
};

/* tenant's hour, added when add (d->m.mu held); NULL when missing or on
 * ENOMEM. */
static struct coved_hour *hour_of(struct coved *d, const char *tenant, bool add)
{
	struct coved_hourly *y = d->hourly;
	for (size_t i = 0; y && i < y->n; i++)
		if (strcmp(y->t[i].tenant, tenant) == 0)
			return y->t[i].h;
	if (!add)
		return NULL;
	if (!y && !(y = d->hourly = calloc(1, sizeof(*y))))
		return NULL;
	if (y->n == y->cap) {
		size_t cap = y->cap ? y->cap * 2 : 4;
		void *nt = realloc(y->t, cap * sizeof(*y->t));
		if (!nt)
			return NULL;
		y->t = nt;
		y->cap = cap;
	}
	struct coved_hour *h = calloc(1, sizeof(*h));
	char *name = strdup(tenant);
	if (!h || !name) {
		free(h);
		free(name);
		return NULL;
	}
	y->t[y->n].tenant = name;
	y->t[y->n++].h = h;
	return h;
}

static bool is_str(const json_t *o, const char *k, const char *v)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s && strcmp(s, v) == 0;
}

void coved_hourly_line(struct coved_sb *sb, const json_t *line)
{
	int64_t now = wall_ms();
	enum { NONE, CREATE, EXEC, DENIAL } what = NONE;
	int64_t lat = 0;
	if (is_str(line, "type", "lifecycle") && is_str(line, "event", "created")) {
		json_int_t took = json_integer_value(json_object_get(line, "createMs"));
		sb->hour_req_ms = now - (took > 0 ? took : 0);
		what = CREATE;
	} else if (is_str(line, "type", "exec") && sb->hour_req_ms) {
		/* Journaled when it ends: it started duration_ms ago. */
		json_int_t ran = json_integer_value(json_object_get(line, "duration_ms"));
		lat = now - (ran > 0 ? ran : 0) - sb->hour_req_ms;
		sb->hour_req_ms = 0;
		what = EXEC;
	} else if (is_str(line, "type", "egress") &&
	           is_str(json_object_get(line, "egress"), "verdict", "deny")) {
		what = DENIAL;
	}
	if (what == NONE)
		return;
	struct coved *d = sb->d;
	pthread_mutex_lock(&d->m.mu);
	struct coved_hour *h = hour_of(d, sb->tenant, true);
	if (h && what == CREATE)
		coved_hour_create(h, now);
	else if (h && what == EXEC)
		coved_hour_first_exec(h, now, lat);
	else if (h)
		coved_hour_denial(h, now);
	pthread_mutex_unlock(&d->m.mu);
}

json_t *coved_hourly_json(struct coved *d, const char *tenant)
{
	pthread_mutex_lock(&d->m.mu);
	json_t *o = coved_hour_json(hour_of(d, tenant, false), wall_ms());
	pthread_mutex_unlock(&d->m.mu);
	return o;
}

void coved_hourly_free(struct coved *d)
{
	struct coved_hourly *y = d->hourly;
	for (size_t i = 0; y && i < y->n; i++) {
		free(y->t[i].tenant);
		free(y->t[i].h);
	}
	if (y)
		free(y->t);
	free(y);
	d->hourly = NULL;
}
