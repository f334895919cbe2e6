/* The cluster's shared state in etcd as one node sees it (dir.h). */
#include "daemon/cluster/dir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/cluster/etcd.h"
#include "daemon/cluster/place.h"
#include "daemon/cluster/view.h"
#include "errf.h"

#define BUCKETS    1024
#define TXN_TRIES  8
#define VIEW_MAX_S 5 /* a placement reads the view again when it is older */
/* A placement whose refresh fails still places on a view this young: the
 * reservation's transaction is on the alloc's revision, so capacity holds
 * whatever the view says; only liveness and drains may be that late. */
#define VIEW_USE_S 30
/* Placers racing for one node's alloc retry while this lasts. */
#define RESERVE_MS 5000

struct cl_entry {
	struct cl_entry *next;
	char id[65];
	struct cl_dir rec;
	int64_t mod_rev;
	bool seen; /* by the scan under way */
};

static uint32_t hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h % BUCKETS;
}

static struct cl_entry *cache_find(struct cl_dir_state *s, const char *id)
{
	for (struct cl_entry *e = s->buckets[hash(id)]; e; e = e->next)
		if (strcmp(e->id, id) == 0)
			return e;
	return NULL;
}

/* The record of id (rec NULL: there is none) at mod_rev, into the cache. */
static void cache_put(struct cl_dir_state *s, const char *id, const struct cl_dir *rec,
                      int64_t mod_rev)
{
	struct cl_entry *e = cache_find(s, id), **pp;
	if (!rec) {
		for (pp = &s->buckets[hash(id)]; *pp; pp = &(*pp)->next)
			if (*pp == e) {
				*pp = e->next;
				free(e);
				break;
			}
		return;
	}
	if (!e) {
		if (strlen(id) >= sizeof(e->id) || !(e = calloc(1, sizeof(*e))))
			return;
		snprintf(e->id, sizeof(e->id), "%s", id);
		e->next = s->buckets[hash(id)];
		s->buckets[hash(id)] = e;
	}
	e->rec = *rec;
	e->mod_rev = mod_rev;
	e->seen = true;
}

void cl_dir_forget(struct cl_dir_state *s, const char *sbid)
{
	pthread_mutex_lock(&s->mu);
	cache_put(s, sbid, NULL, 0);
	pthread_mutex_unlock(&s->mu);
}

int cl_dir_init(struct cl_dir_state *s, struct etcd *e, const char *self)
{
	memset(s, 0, sizeof(*s));
	if (!(s->buckets = calloc(BUCKETS, sizeof(*s->buckets))))
		return -ENOMEM;
	s->e = e;
	snprintf(s->self, sizeof(s->self), "%s", self);
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->wmu, NULL);
	pthread_mutex_init(&s->rmu, NULL);
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	s->seed = (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 32) ^ hash(self);
	return 0;
}

void cl_dir_fini(struct cl_dir_state *s)
{
	for (size_t b = 0; s->buckets && b < BUCKETS; b++)
		for (struct cl_entry *e = s->buckets[b], *nx; e; e = nx) {
			nx = e->next;
			free(e);
		}
	free(s->buckets);
	cl_view_free(s->nodes, s->nnodes);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->wmu);
	pthread_mutex_destroy(&s->rmu);
	memset(s, 0, sizeof(*s));
}

static const struct etcd_kv *kv_find(const struct etcd_kvs *k, const char *key)
{
	for (size_t i = 0; i < k->n; i++)
		if (strcmp(k->kv[i].key, key) == 0)
			return &k->kv[i];
	return NULL;
}

/* An alloc value read back (a failed transaction's GET) into the view. */
static void alloc_update(struct cl_dir_state *s, const char *node, const struct etcd_kvs *got)
{
	char key[80];
	snprintf(key, sizeof(key), CL_PREFIX_ALLOC "%s", node);
	const struct etcd_kv *kv = kv_find(got, key);
	pthread_mutex_lock(&s->mu);
	struct cl_vnode *x = cl_vnode_get(&s->nodes, &s->nnodes, node);
	if (x) {
		memset(&x->alloc, 0, sizeof(x->alloc));
		x->alloc_rev = 0;
		if (kv && cl_alloc_decode(kv->value, kv->value_len, &x->alloc) == 0)
			x->alloc_rev = kv->mod_rev;
	}
	pthread_mutex_unlock(&s->mu);
}

static void alloc_set(struct cl_dir_state *s, const char *node, const struct cl_alloc *a,
                      int64_t rev)
{
	pthread_mutex_lock(&s->mu);
	struct cl_vnode *x = cl_vnode_get(&s->nodes, &s->nnodes, node);
	if (x) {
		x->alloc = *a;
		x->alloc_rev = rev;
	}
	pthread_mutex_unlock(&s->mu);
}

static uint64_t sub_sat(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* One alloc a record move changes: its key, revision and new value. */
struct alloc_change {
	char node[CL_NODE_ID_MAX + 1];
	char key[80];
	int64_t rev;
	struct cl_alloc was, now;
	char *text;
};

/* The allocs that moving old (present or not) to want changes, with the
 * values the view has.  Return: how many (0 to 2). */
static size_t alloc_changes(struct cl_dir_state *s, const struct cl_dir *old,
                            const struct cl_dir *want, struct alloc_change *c)
{
	size_t n = 0;
	const struct cl_dir *side[2] = { old, want };
	pthread_mutex_lock(&s->mu);
	for (int k = 0; k < 2; k++) {
		const struct cl_dir *r = side[k];
		if (!r || !cl_dir_commits(r))
			continue;
		size_t j = 0;
		while (j < n && strcmp(c[j].node, r->node) != 0)
			j++;
		if (j == n) {
			memset(&c[n], 0, sizeof(c[n]));
			snprintf(c[n].node, sizeof(c[n].node), "%s", r->node);
			snprintf(c[n].key, sizeof(c[n].key), CL_PREFIX_ALLOC "%s", r->node);
			struct cl_vnode *x = cl_vnode_find(s->nodes, s->nnodes, r->node);
			if (x) {
				c[n].was = x->alloc;
				c[n].rev = x->alloc_rev;
			}
			c[n].now = c[n].was;
			n++;
		}
		if (k == 0) {
			c[j].now.vcpus = sub_sat(c[j].now.vcpus, r->vcpus);
			c[j].now.memory_mib = sub_sat(c[j].now.memory_mib, r->memory_mib);
		} else {
			c[j].now.vcpus += r->vcpus;
			c[j].now.memory_mib += r->memory_mib;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return n;
}

static bool dir_same(const struct cl_dir *a, const struct cl_dir *b)
{
	return strcmp(a->node, b->node) == 0 && strcmp(a->state, b->state) == 0 &&
	       a->vcpus == b->vcpus && a->memory_mib == b->memory_mib && a->shared == b->shared &&
	       strcmp(a->reason, b->reason) == 0 && strcmp(a->tenant, b->tenant) == 0;
}

/* The cached record of id, read from etcd when the cache has none.
 * Return: 1 present (rec, rev set), 0 absent, -errno. */
static int dir_read(struct cl_dir_state *s, const char *id, struct cl_dir *rec, int64_t *rev,
                    char *err, size_t errlen)
{
	pthread_mutex_lock(&s->mu);
	struct cl_entry *e = cache_find(s, id);
	if (e) {
		*rec = e->rec;
		*rev = e->mod_rev;
	}
	pthread_mutex_unlock(&s->mu);
	if (e)
		return 1;
	char key[128];
	snprintf(key, sizeof(key), CL_PREFIX_SB "%s", id);
	struct etcd_kvs k = { 0 };
	int r = etcd_get(s->e, key, &k, err, errlen);
	if (r < 0)
		return r;
	*rev = 0;
	r = 0;
	if (k.n && cl_dir_decode(k.kv[0].value, k.kv[0].value_len, rec) == 0) {
		*rev = k.kv[0].mod_rev;
		pthread_mutex_lock(&s->mu);
		cache_put(s, id, rec, *rev);
		pthread_mutex_unlock(&s->mu);
		r = 1;
	} else if (k.n) {
		r = errf(err, errlen, -EPROTO, "the directory record of %s is malformed", id);
	}
	etcd_kvs_free(&k);
	return r;
}

/* The record of id as a failed transaction read it back. */
static int dir_reread(struct cl_dir_state *s, const char *id, const struct etcd_kvs *got,
                      struct cl_dir *rec, int64_t *rev)
{
	char key[128];
	snprintf(key, sizeof(key), CL_PREFIX_SB "%s", id);
	const struct etcd_kv *kv = kv_find(got, key);
	int present = kv && cl_dir_decode(kv->value, kv->value_len, rec) == 0;
	*rev = present ? kv->mod_rev : 0;
	pthread_mutex_lock(&s->mu);
	cache_put(s, id, present ? rec : NULL, *rev);
	pthread_mutex_unlock(&s->mu);
	return present;
}

/* One try at moving the record (see cl_dir_set).  Return: 1 done, 0 lost
 * the race (re-read into rec, rev, the view), -errno. */
static int dir_txn(struct cl_dir_state *s, const char *id, int present, struct cl_dir *rec,
                   int64_t *rev, const struct cl_dir *want, char *err, size_t errlen)
{
	struct alloc_change ch[2];
	size_t nch = alloc_changes(s, present ? rec : NULL, want, ch);
	char key[128];
	snprintf(key, sizeof(key), CL_PREFIX_SB "%s", id);
	char *text = want ? cl_dir_encode(want) : NULL;
	struct etcd_cmp cmp[3] = { { .key = key, .target = ETCD_CMP_MOD, .rev = *rev } };
	struct etcd_op ok[3] = { { .kind = want ? ETCD_OP_PUT : ETCD_OP_DELETE, .key = key } };
	struct etcd_op fail[3] = { { .kind = ETCD_OP_GET, .key = key } };
	int r = want && !text ? -ENOMEM : 0;
	if (text) {
		ok[0].value = text;
		ok[0].value_len = strlen(text);
	}
	for (size_t i = 0; i < nch; i++) {
		ch[i].text = cl_alloc_encode(&ch[i].now);
		if (!ch[i].text)
			r = -ENOMEM;
		cmp[i + 1] =
		    (struct etcd_cmp){ .key = ch[i].key, .target = ETCD_CMP_MOD, .rev = ch[i].rev };
		ok[i + 1] = (struct etcd_op){ .kind = ETCD_OP_PUT,
			                      .key = ch[i].key,
			                      .value = ch[i].text,
			                      .value_len = ch[i].text ? strlen(ch[i].text) : 0 };
		fail[i + 1] = (struct etcd_op){ .kind = ETCD_OP_GET, .key = ch[i].key };
	}
	bool won = false;
	struct etcd_kvs got = { 0 };
	if (!r)
		r = etcd_txn(s->e, cmp, nch + 1, ok, nch + 1, fail, nch + 1, &won, &got, err,
		             errlen);
	if (!r && won) {
		atomic_fetch_add(&s->writes, 1);
		pthread_mutex_lock(&s->mu);
		cache_put(s, id, want, got.revision);
		pthread_mutex_unlock(&s->mu);
		for (size_t i = 0; i < nch; i++)
			alloc_set(s, ch[i].node, &ch[i].now, got.revision);
		r = 1;
	} else if (!r) {
		/* Lost the race: what the failure branch read is news. */
		for (size_t i = 0; i < nch; i++)
			alloc_update(s, ch[i].node, &got);
		dir_reread(s, id, &got, rec, rev);
	}
	etcd_kvs_free(&got);
	for (size_t i = 0; i < nch; i++)
		free(ch[i].text);
	free(text);
	return r;
}

int cl_dir_set(struct cl_dir_state *s, const char *sbid, const struct cl_dir *want, bool only_mine,
               char *err, size_t errlen)
{
	struct cl_dir rec;
	int64_t rev = 0;
	pthread_mutex_lock(&s->wmu);
	int present = dir_read(s, sbid, &rec, &rev, err, errlen), r = present;
	for (int tries = 0; r >= 0 && tries < TXN_TRIES; tries++) {
		if (only_mine && present && strcmp(rec.node, s->self) != 0) {
			r = errf(err, errlen, -EPERM, "sandbox %s belongs to node %s now", sbid,
			         rec.node);
			break;
		}
		/* Dead is final: a record marked dead keeps the first reason
		 * (a node that comes back after its loss says it differently). */
		bool still_dead = want && present && !strcmp(rec.state, "dead") &&
		                  !strcmp(want->state, "dead") && !strcmp(rec.node, want->node);
		if ((!want && !present) || still_dead ||
		    (want && present && dir_same(&rec, want))) {
			r = 1;
			break;
		}
		r = dir_txn(s, sbid, present, &rec, &rev, want, err, errlen);
		if (r != 0)
			break;
		present = rev != 0;
		r = 0;
	}
	pthread_mutex_unlock(&s->wmu);
	if (r == 0)
		return errf(err, errlen, -EAGAIN, "the record of %s kept changing under us", sbid);
	return r < 0 ? r : 0;
}

enum cl_where cl_dir_lookup(struct cl_dir_state *s, const char *sbid, struct cl_dir *rec,
                            char *addr, size_t addrlen)
{
	struct cl_dir d;
	int64_t rev;
	char err[256];
	if (addr && addrlen)
		addr[0] = 0;
	int r = dir_read(s, sbid, &d, &rev, err, sizeof(err));
	if (r < 0)
		return CL_UNKNOWN;
	if (r == 0)
		return CL_NOWHERE;
	if (rec)
		*rec = d;
	if (strcmp(d.state, "dead") == 0)
		return CL_LOST;
	if (strcmp(d.node, s->self) == 0)
		return CL_HERE;
	pthread_mutex_lock(&s->mu);
	struct cl_vnode *x = cl_vnode_find(s->nodes, s->nnodes, d.node);
	enum cl_where w = x && x->live ? CL_THERE : CL_LOST;
	if (w == CL_THERE && addr)
		snprintf(addr, addrlen, "%s", x->rec.addr);
	pthread_mutex_unlock(&s->mu);
	return w;
}

/* Candidates as place.h sees them, from the view, minus skip. */
static struct cl_node *candidates(struct cl_dir_state *s, const char *template_id,
                                  const char *const *skip, size_t *n)
{
	struct cl_node *c = calloc(s->nnodes ? s->nnodes : 1, sizeof(*c));
	for (size_t i = 0; c && i < s->nnodes; i++) {
		const struct cl_vnode *x = &s->nodes[i];
		bool skipped = false;
		for (size_t k = 0; skip && skip[k]; k++)
			skipped |= strcmp(skip[k], x->rec.id) == 0;
		c[i] =
		    (struct cl_node){ .vcpus = x->rec.vcpus,
			              .memory_mib = x->rec.memory_mib,
			              .used_vcpus = x->alloc.vcpus,
			              .used_memory_mib = x->alloc.memory_mib,
			              .ready = x->live && !x->draining && !skipped,
			              .has_template = cl_node_has_template(&x->rec, template_id) };
	}
	*n = s->nnodes;
	return c;
}

/* backoff() - a placer that lost the race for an alloc waits a random
 * while, longer after each loss (up to 80 ms), so a burst of placers
 * spreads out instead of retrying in lockstep. */
static void backoff(int tries)
{
	static _Thread_local uint64_t x;
	if (!x)
		x = (uint64_t)mono_ms() ^ ((uint64_t)(uintptr_t)&x << 16) ^ 0x9e3779b97f4a7c15ULL;
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	unsigned cap = 5u << (tries < 4 ? tries : 4); /* 5, 10, 20, 40, 80 ms */
	usleep((useconds_t)(x % cap) * 1000);
}

/* The reservation on node (see cl_place).  Return: 1 reserved, 0 no room
 * there now, -errno. */
static int reserve(struct cl_dir_state *s, const char *node, const struct cl_dir *want,
                   const char *sbid, char *err, size_t errlen)
{
	char akey[80], dkey[128];
	snprintf(akey, sizeof(akey), CL_PREFIX_ALLOC "%s", node);
	snprintf(dkey, sizeof(dkey), CL_PREFIX_SB "%s", sbid);
	char *dtext = cl_dir_encode(want);
	int r = dtext ? 0 : -ENOMEM;
	int64_t end = mono_ms() + RESERVE_MS;
	int tries = 0;
	bool full = false; /* no room there: not a lost race */
	for (; r == 0 && (tries < TXN_TRIES || mono_ms() < end); tries++) {
		pthread_mutex_lock(&s->mu);
		struct cl_vnode *x = cl_vnode_find(s->nodes, s->nnodes, node);
		struct cl_node n = { 0 };
		struct cl_alloc a = { 0 };
		int64_t rev = 0;
		if (x) {
			n = (struct cl_node){ .vcpus = x->rec.vcpus,
				              .memory_mib = x->rec.memory_mib,
				              .used_vcpus = x->alloc.vcpus,
				              .used_memory_mib = x->alloc.memory_mib };
			a = x->alloc;
			rev = x->alloc_rev;
		}
		pthread_mutex_unlock(&s->mu);
		if (!x || !cl_fits(&n, want->vcpus, want->memory_mib)) {
			full = true;
			break;
		}
		a.vcpus += want->vcpus;
		a.memory_mib += want->memory_mib;
		char *atext = cl_alloc_encode(&a);
		if (!atext) {
			r = -ENOMEM;
			break;
		}
		struct etcd_cmp cmp[2] = { { .key = akey, .target = ETCD_CMP_MOD, .rev = rev },
			                   { .key = dkey, .target = ETCD_CMP_CREATE, .rev = 0 } };
		struct etcd_op ok[2] = { { .kind = ETCD_OP_PUT,
			                   .key = akey,
			                   .value = atext,
			                   .value_len = strlen(atext) },
			                 { .kind = ETCD_OP_PUT,
			                   .key = dkey,
			                   .value = dtext,
			                   .value_len = strlen(dtext) } };
		struct etcd_op fail[2] = { { .kind = ETCD_OP_GET, .key = akey },
			                   { .kind = ETCD_OP_GET, .key = dkey } };
		bool won = false;
		struct etcd_kvs got = { 0 };
		r = etcd_txn(s->e, cmp, 2, ok, 2, fail, 2, &won, &got, err, errlen);
		free(atext);
		if (!r && won) {
			atomic_fetch_add(&s->writes, 1);
			alloc_set(s, node, &a, got.revision);
			pthread_mutex_lock(&s->mu);
			cache_put(s, sbid, want, got.revision);
			pthread_mutex_unlock(&s->mu);
			r = 1;
		} else if (!r) {
			alloc_update(s, node, &got);
			if (kv_find(&got, dkey))
				r = errf(err, errlen, -EEXIST, "sandbox id %s is taken", sbid);
			else
				backoff(tries);
		}
		etcd_kvs_free(&got);
	}
	free(dtext);
	if (r == 0 && !full)
		r = errf(err, errlen, -EBUSY,
		         "node %s: %d placements in a row lost the race for its capacity", node,
		         tries);
	return r;
}

static int64_t view_age_ms(struct cl_dir_state *s)
{
	pthread_mutex_lock(&s->mu);
	int64_t age = s->view_ms ? wall_ms() - s->view_ms : INT64_MAX;
	pthread_mutex_unlock(&s->mu);
	return age;
}

/* fresh_view() - the view read again when it is older than VIEW_MAX_S, by
 * one placement at a time (the others wait and find it fresh: a burst of
 * creates reads etcd once, not once each).  A failed read leaves a view
 * younger than VIEW_USE_S in use. */
static int fresh_view(struct cl_dir_state *s, char *err, size_t errlen)
{
	if (view_age_ms(s) <= VIEW_MAX_S * 1000)
		return 0;
	pthread_mutex_lock(&s->rmu);
	int r = 0;
	if (view_age_ms(s) > VIEW_MAX_S * 1000)
		r = cl_view_refresh(s, err, errlen);
	pthread_mutex_unlock(&s->rmu);
	return r < 0 && view_age_ms(s) > VIEW_USE_S * 1000 ? r : 0;
}

int cl_place(struct cl_dir_state *s, const struct cl_dir *want, const char *sbid,
             const char *const *skip, char *node, size_t nodelen, char *addr, size_t addrlen,
             char *err, size_t errlen)
{
	int r = fresh_view(s, err, errlen);
	if (r < 0)
		return r;
	bool busy = false;
	size_t n, pick[CL_PICK_K];
	pthread_mutex_lock(&s->mu);
	struct cl_node *c = candidates(s, want->template_id, skip, &n);
	size_t got = 0;
	/* A user snapshot lives on one node: only the nodes that list it
	 * first; none (its node full or gone): any, which answers why. */
	if (c && strncmp(want->template_id, "snap-", 5) == 0) {
		struct cl_node *h = malloc((n ? n : 1) * sizeof(*h));
		for (size_t i = 0; h && i < n; i++) {
			h[i] = c[i];
			h[i].ready &= h[i].has_template;
		}
		got =
		    h ? cl_pick(h, n, want->vcpus, want->memory_mib, CL_PICK_K, &s->seed, pick) : 0;
		free(h);
	}
	if (c && !got)
		got = cl_pick(c, n, want->vcpus, want->memory_mib, CL_PICK_K, &s->seed, pick);
	char ids[CL_PICK_K][CL_NODE_ID_MAX + 1], addrs[CL_PICK_K][CL_ADDR_MAX + 1];
	for (size_t i = 0; i < got; i++) {
		snprintf(ids[i], sizeof(ids[i]), "%s", s->nodes[pick[i]].rec.id);
		snprintf(addrs[i], sizeof(addrs[i]), "%s", s->nodes[pick[i]].rec.addr);
	}
	pthread_mutex_unlock(&s->mu);
	free(c);
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < got; i++) {
		struct cl_dir w = *want;
		snprintf(w.node, sizeof(w.node), "%s", ids[i]);
		snprintf(w.state, sizeof(w.state), "running");
		r = reserve(s, ids[i], &w, sbid, err, errlen);
		if (r == -EBUSY) {
			busy = true; /* err says so; the next candidate may have room */
			continue;
		}
		if (r < 0)
			return r;
		if (r == 1) {
			snprintf(node, nodelen, "%s", ids[i]);
			snprintf(addr, addrlen, "%s", addrs[i]);
			return 0;
		}
	}
	if (busy)
		return -EBUSY;
	return errf(err, errlen, -ENOSPC, "no ready node has room for %llu vCPUs and %llu MiB",
	            (unsigned long long)want->vcpus, (unsigned long long)want->memory_mib);
}

int cl_dir_scan(struct cl_dir_state *s, char *err, size_t errlen)
{
	struct etcd_kvs k = { 0 };
	int r = etcd_range_prefix(s->e, CL_PREFIX_SB, &k, err, errlen);
	if (r < 0)
		return r;
	pthread_mutex_lock(&s->mu);
	for (size_t b = 0; b < BUCKETS; b++)
		for (struct cl_entry *e = s->buckets[b]; e; e = e->next)
			e->seen = false;
	for (size_t i = 0; i < k.n; i++) {
		struct cl_dir d;
		const char *id = k.kv[i].key + strlen(CL_PREFIX_SB);
		if (cl_dir_decode(k.kv[i].value, k.kv[i].value_len, &d) == 0)
			cache_put(s, id, &d, k.kv[i].mod_rev);
	}
	/* Records gone from etcd leave the cache. */
	for (size_t b = 0; b < BUCKETS; b++)
		for (struct cl_entry **pp = &s->buckets[b]; *pp;) {
			if (!(*pp)->seen) {
				struct cl_entry *e = *pp;
				*pp = e->next;
				free(e);
			} else {
				pp = &(*pp)->next;
			}
		}
	pthread_mutex_unlock(&s->mu);
	int marked = 0;
	for (size_t i = 0; i < k.n; i++) {
		struct cl_dir d;
		const char *id = k.kv[i].key + strlen(CL_PREFIX_SB);
		if (cl_dir_decode(k.kv[i].value, k.kv[i].value_len, &d) < 0 ||
		    cl_view_live(s, d.node))
			continue;
		bool running = strcmp(d.state, "running") == 0;
		bool paused = strcmp(d.state, "paused") == 0;
		if (!running && !(paused && !d.shared))
			continue;
		struct cl_dir dead = d;
		snprintf(dead.state, sizeof(dead.state), "dead");
		snprintf(dead.reason, sizeof(dead.reason),
		         "node lost: %s stopped renewing its lease", d.node);
		char e2[256];
		if (cl_dir_set(s, id, &dead, false, e2, sizeof(e2)) == 0)
			marked++;
	}
	etcd_kvs_free(&k);
	return marked;
}

int cl_dir_claim(struct cl_dir_state *s, const char *sbid, const struct cl_dir *seen,
                 const struct cl_dir *want, char *err, size_t errlen)
{
	struct cl_dir rec;
	int64_t rev = 0;
	pthread_mutex_lock(&s->wmu);
	int r = dir_read(s, sbid, &rec, &rev, err, errlen);
	if (r == 1 && dir_same(&rec, seen))
		r = dir_txn(s, sbid, 1, &rec, &rev, want, err, errlen);
	else if (r >= 0)
		r = 0;
	pthread_mutex_unlock(&s->wmu);
	return r;
}

int cl_alloc_settle(struct cl_dir_state *s, char *err, size_t errlen)
{
	char akey[80];
	snprintf(akey, sizeof(akey), CL_PREFIX_ALLOC "%s", s->self);
	struct etcd_kvs sbs = { 0 }, a = { 0 };
	/* Two reads, the records first: a create between them raises the
	 * alloc, and the transaction below then fails on its revision. */
	int r = etcd_range_prefix(s->e, CL_PREFIX_SB, &sbs, err, errlen);
	if (!r)
		r = etcd_get(s->e, akey, &a, err, errlen);
	struct cl_alloc sum = { 0 }, was = { 0 };
	for (size_t i = 0; !r && i < sbs.n; i++) {
		struct cl_dir d;
		if (cl_dir_decode(sbs.kv[i].value, sbs.kv[i].value_len, &d) == 0 &&
		    strcmp(d.node, s->self) == 0 && cl_dir_commits(&d)) {
			sum.vcpus += d.vcpus;
			sum.memory_mib += d.memory_mib;
		}
	}
	int64_t rev = !r && a.n ? a.kv[0].mod_rev : 0;
	if (!r && a.n)
		cl_alloc_decode(a.kv[0].value, a.kv[0].value_len, &was);
	etcd_kvs_free(&sbs);
	etcd_kvs_free(&a);
	if (r || (rev && was.vcpus == sum.vcpus && was.memory_mib == sum.memory_mib))
		return r;
	char *text = cl_alloc_encode(&sum);
	if (!text)
		return -ENOMEM;
	struct etcd_cmp cmp = { .key = akey, .target = ETCD_CMP_MOD, .rev = rev };
	struct etcd_op put = {
		.kind = ETCD_OP_PUT, .key = akey, .value = text, .value_len = strlen(text)
	};
	bool won = false;
	struct etcd_kvs got = { 0 };
	r = etcd_txn(s->e, &cmp, 1, &put, 1, NULL, 0, &won, &got, err, errlen);
	if (!r && won)
		alloc_set(s, s->self, &sum, got.revision);
	etcd_kvs_free(&got);
	free(text);
	return r;
}
