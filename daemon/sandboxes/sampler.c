/* The usage sampler: a thread, a table of rings by sandbox id. */
#include "daemon/sandboxes/sampler.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cove.h"
#include "daemon/sandboxes/samples.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"

struct entry {
	char id[COVED_ID_LEN + 1];
	struct coved_ring *ring;
	bool seen; /* in the list at this round */
};

struct coved_sampler {
	pthread_t thread;
	pthread_mutex_t mu; /* the table, stop */
	pthread_cond_t cond;
	bool stop;
	struct entry *e;
	size_t n, cap;
};

static struct entry *find(struct coved_sampler *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->e[i].id, id))
			return &s->e[i];
	return NULL;
}

/* id's entry, added when missing (mu held); NULL on ENOMEM. */
static struct entry *find_add(struct coved_sampler *s, const char *id)
{
	struct entry *e = find(s, id);
	if (e)
		return e;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct entry *ne = realloc(s->e, cap * sizeof(*ne));
		if (!ne)
			return NULL;
		s->e = ne;
		s->cap = cap;
	}
	struct coved_ring *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	e = &s->e[s->n++];
	*e = (struct entry){ .ring = r };
	snprintf(e->id, sizeof(e->id), "%s", id);
	return e;
}

/* One sandbox: a sample when it runs. */
static void sample_one(struct coved_sampler *s, struct coved_sb *sb)
{
	pthread_mutex_lock(&sb->mu);
	bool running = sb->state == COVED_SB_RUNNING && sb->cove;
	struct cove_sandbox *cs = sb->cove; /* valid while our reference is held */
	struct coved_sample smp = { .cpus = sb->cpus, .mem_total = (uint64_t)sb->memory_mib << 20 };
	pthread_mutex_unlock(&sb->mu);
	struct cove_usage u;
	char err[256];
	bool have = running && cove_usage(cs, &u, err, sizeof(err)) == 0;
	int64_t mono_us = mono_ms() * 1000;
	smp.t_ms = coved_now_ms();
	pthread_mutex_lock(&s->mu);
	struct entry *e = have ? find_add(s, coved_sb_id(sb)) : find(s, coved_sb_id(sb));
	if (e) {
		e->seen = true;
		if (!have) {
			e->ring->have_last = false; /* paused: no share across the gap */
		} else {
			smp.cpu_pct = coved_ring_cpu(e->ring, u.cpu_usec, mono_us, smp.cpus);
			/* The VMM's own few MiB may take it past the guest's size. */
			smp.mem_used = u.mem_bytes < smp.mem_total || !smp.mem_total
			                   ? u.mem_bytes
			                   : smp.mem_total;
			smp.mem_cache = u.mem_cache;
			smp.disk_used = u.disk_used;
			smp.disk_total = u.disk_total;
			smp.net_rx = u.net_rx;
			smp.net_tx = u.net_tx;
			coved_ring_push(e->ring, &smp);
		}
	}
	pthread_mutex_unlock(&s->mu);
}

void coved_sampler_tick(struct coved *d)
{
	struct coved_sampler *s = d->sampler;
	size_t n = 0;
	struct coved_sb **all = coved_sb_all(d, &n);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++)
		s->e[i].seen = false;
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < n; i++) {
		sample_one(s, all[i]);
		coved_sb_unref(all[i]);
	}
	free(all);
	/* Sandboxes gone from the list: their samples go too. */
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n;) {
		if (s->e[i].seen) {
			i++;
			continue;
		}
		free(s->e[i].ring);
		s->e[i] = s->e[--s->n];
	}
	pthread_mutex_unlock(&s->mu);
}

static void *run(void *arg)
{
	struct coved *d = arg;
	struct coved_sampler *s = d->sampler;
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		pthread_mutex_unlock(&s->mu);
		coved_sampler_tick(d);
		pthread_mutex_lock(&s->mu);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += COVED_SAMPLE_MS / 1000;
		ts.tv_nsec += (COVED_SAMPLE_MS % 1000) * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!s->stop)
			pthread_cond_timedwait(&s->cond, &s->mu, &ts);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int coved_sampler_start(struct coved *d, char *err, size_t errlen)
{
	struct coved_sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return errf(err, errlen, -ENOMEM, "out of memory");
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	d->sampler = s;
	int e = pthread_create(&s->thread, NULL, run, d);
	if (e) {
		d->sampler = NULL;
		pthread_cond_destroy(&s->cond);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return errf(err, errlen, -e, "cannot start the sampler thread: %s", strerror(e));
	}
	return 0;
}

void coved_sampler_stop(struct coved *d)
{
	struct coved_sampler *s = d->sampler;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	for (size_t i = 0; i < s->n; i++)
		free(s->e[i].ring);
	free(s->e);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
	free(s);
	d->sampler = NULL;
}

json_t *coved_sampler_json(struct coved *d, const char *id, int64_t start_s, int64_t end_s)
{
	struct coved_sampler *s = d->sampler;
	if (!s)
		return json_array();
	pthread_mutex_lock(&s->mu);
	struct entry *e = find(s, id);
	json_t *a = coved_ring_json(e ? e->ring : NULL, start_s, end_s);
	pthread_mutex_unlock(&s->mu);
	return a;
}
