/* The VMM pool (cove.h, docs/pool.md "The VMM pool"): pre-spawned
 * cove-vmm processes (--pool CPUS), each waiting on its control socket for
 * the one sandbox it will serve.
 *
 * A member is <base>/.pool-XXXXXX/ (hidden from the registry: dot names
 * are never sandboxes) holding root/ (its future jail root, with
 * root/api.sock) and vmm.log.  It was spawned like a detached sandbox's
 * VMM: inside its namespaces (vmm_spawn), in a cgroup of its own
 * (<parent>/.pool-XXXXXX), with a jail uid claimed under its name.  Taking
 * it for sandbox S (pool_adopt_root, pool_adopt_jail, pool_start):
 *   1. root/ is renamed onto S's empty <entry>/root (RENAME_NOREPLACE), so
 *      every path libcove uses for S is what it would be for a spawned VMM;
 *      vmm.log becomes S's;
 *   2. the uid claim names S; the process moves into S's new cgroup, made
 *      with S's limits, and the member's cgroup goes;
 *   3. the start request (the flags a spawn would have had, plus --jail
 *      <entry>/root and --jail-uid) goes over the connection the pool kept
 *      open since the member said ready; the member opens what they name,
 *      enters its jail, starts its threads under their filters and
 *      answers.
 * A member whose connection closes (the pool ended, its owner died) exits:
 * none outlives its pool. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cove_limits.h"
#include "errf.h"
#include "io.h"
#include "lib/base/cgroup.h"
#include "lib/base/cove_types.h"
#include "lib/base/jail.h"
#include "lib/base/registry.h"
#include "lib/vmm/memcache.h"
#include "lib/vmm/pool.h"
#include "lib/vmm/pool_member.h"

#define POOL_BACKOFF_MS 1000 /* after a failed spawn */

struct cove_vmm_pool {
	struct pool_shared sh; /* the lock, the refill signal, the stale cgroups */
	pthread_cond_t full;   /* a member was added */
	char *vmm;
	unsigned int size, nshapes;
	unsigned int cpus[COVE_POOL_SHAPES_MAX];
	struct pool_member *ready[COVE_POOL_SHAPES_MAX];
	unsigned int nready[COVE_POOL_SHAPES_MAX];
	uint64_t hits, misses, spawned, failed;
	char last_error[256];
	bool stopping;
	pthread_t thread;
	bool thread_started;
};

/* ---- the pool ---- */

static int shape_of(const struct cove_vmm_pool *p, unsigned int cpus)
{
	for (unsigned int i = 0; i < p->nshapes; i++)
		if (p->cpus[i] == cpus)
			return (int)i;
	return -1;
}

static void free_list(struct pool_member *pm)
{
	while (pm) {
		struct pool_member *next = pm->next;
		pool_member_free(pm);
		pm = next;
	}
}

/* Takes the dead out of every list (under mu); they are freed by the
 * caller, outside it. */
static struct pool_member *prune(struct cove_vmm_pool *p)
{
	struct pool_member *dead = NULL;
	for (unsigned int i = 0; i < p->nshapes; i++) {
		for (struct pool_member **pp = &p->ready[i]; *pp;) {
			struct pool_member *pm = *pp;
			if (pool_member_alive(pm)) {
				pp = &pm->next;
				continue;
			}
			*pp = pm->next;
			p->nready[i]--;
			pm->next = dead;
			dead = pm;
		}
	}
	return dead;
}

static void timed_wait(struct cove_vmm_pool *p, pthread_cond_t *c, int ms)
{
	struct timespec ts = clock_after_ms(CLOCK_REALTIME, ms);
	pthread_cond_timedwait(c, &p->sh.mu, &ts);
}

static void *refill(void *arg)
{
	struct cove_vmm_pool *p = arg;
	/* A refill yields to running guests: this thread's own share of a
	 * member's start (its cgroup, the clone3 with five new namespaces)
	 * runs at nice 19 like the member itself, so a take's restore does
	 * not share the CPU with the refill it set off.  Root only, as for
	 * the members (vmm_proc.c): the member inherits this thread's nice
	 * and only root could take 0 back. */
	if (geteuid() == 0)
		(void)setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
	pthread_mutex_lock(&p->sh.mu);
	while (!p->stopping) {
		for (unsigned int i = 0; i < p->sh.nstale;) {
			if (rmdir(p->sh.stale_cg[i]) == 0 || errno != EBUSY) {
				free(p->sh.stale_cg[i]);
				p->sh.stale_cg[i] = p->sh.stale_cg[--p->sh.nstale];
			} else {
				i++;
			}
		}
		struct pool_member *dead = prune(p);
		if (dead) {
			pthread_mutex_unlock(&p->sh.mu);
			free_list(dead);
			pthread_mutex_lock(&p->sh.mu);
			continue;
		}
		int shape = -1;
		for (unsigned int i = 0; i < p->nshapes && shape < 0; i++)
			if (p->nready[i] < p->size)
				shape = (int)i;
		if (shape < 0) {
			timed_wait(p, &p->sh.cond, p->sh.nstale ? 100 : 1000);
			continue;
		}
		unsigned int cpus = p->cpus[shape];
		pthread_mutex_unlock(&p->sh.mu);
		char err[256];
		struct pool_member *pm = pool_member_spawn(&p->sh, p->vmm, cpus, err, sizeof(err));
		pthread_mutex_lock(&p->sh.mu);
		if (!pm) {
			p->failed++;
			snprintf(p->last_error, sizeof(p->last_error), "%s", err);
			timed_wait(p, &p->sh.cond, POOL_BACKOFF_MS);
			continue;
		}
		p->spawned++;
		pm->next = p->ready[shape];
		p->ready[shape] = pm;
		p->nready[shape]++;
		pthread_cond_broadcast(&p->full);
	}
	pthread_mutex_unlock(&p->sh.mu);
	return NULL;
}

struct pool_member *pool_take(struct cove_vmm_pool *p, unsigned int cpus)
{
	if (!p)
		return NULL;
	pthread_mutex_lock(&p->sh.mu);
	int shape = shape_of(p, cpus);
	struct pool_member *pm = NULL, *dead = NULL;
	while (shape >= 0 && p->ready[shape] && !pm) {
		pm = p->ready[shape];
		p->ready[shape] = pm->next;
		p->nready[shape]--;
		pm->next = NULL;
		if (!pool_member_alive(pm)) {
			pm->next = dead;
			dead = pm;
			pm = NULL;
		}
	}
	if (pm) {
		p->hits++;
		pm->t_taken = (int64_t)mono_ns();
	} else {
		p->misses++;
	}
	pthread_cond_signal(&p->sh.cond);
	pthread_mutex_unlock(&p->sh.mu);
	free_list(dead);
	return pm;
}

/* Member directories a pool that died left: their VMMs exited when its
 * connections closed; their socket answers no more. */
static void sweep_stale(void)
{
	char base[REGISTRY_DIR_MAX], err[256];
	if (registry_base(base, sizeof(base), err, sizeof(err)) < 0)
		return;
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, POOL_PREFIX, strlen(POOL_PREFIX)))
			continue;
		char dir[PATH_MAX], api[PATH_MAX + 32];
		snprintf(dir, sizeof(dir), "%s/%s", base, e->d_name);
		snprintf(api, sizeof(api), "%s/" JAIL_ROOT_DIR "/api.sock", dir);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		if (strlen(api) >= sizeof(sa.sun_path))
			continue;
		strcpy(sa.sun_path, api);
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		bool live = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (live)
			continue;
		jail_release_named(dir, e->d_name);
		cgroup_remove_named(e->d_name);
		registry_remove_tree(dir);
	}
	closedir(d);
}

void cove_vmm_pool_free(struct cove_vmm_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->sh.mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->sh.cond);
	pthread_mutex_unlock(&p->sh.mu);
	if (p->thread_started)
		pthread_join(p->thread, NULL);
	/* Every connection closes first, so all members end at once. */
	for (unsigned int i = 0; i < p->nshapes; i++)
		for (struct pool_member *pm = p->ready[i]; pm; pm = pm->next) {
			close(pm->conn);
			pm->conn = -1;
		}
	for (unsigned int i = 0; i < p->nshapes; i++)
		free_list(p->ready[i]);
	for (unsigned int i = 0; i < p->sh.nstale; i++) {
		cgroup_remove(p->sh.stale_cg[i]);
		free(p->sh.stale_cg[i]);
	}
	pthread_cond_destroy(&p->sh.cond);
	pthread_cond_destroy(&p->full);
	pthread_mutex_destroy(&p->sh.mu);
	free(p->vmm);
	free(p);
}

int cove_vmm_pool_new(const struct cove_vmm_pool_opts *o, struct cove_vmm_pool **out, char *err,
                      size_t errlen)
{
	*out = NULL;
	if (!o->vmm || !o->vmm[0])
		return errf(err, errlen, -EINVAL, "pool: no cove-vmm binary");
	if (o->size < 1 || o->size > COVE_POOL_SIZE_MAX)
		return errf(err, errlen, -EINVAL, "pool size must be from 1 to %d, got %u",
		            COVE_POOL_SIZE_MAX, o->size);
	if (o->nshapes < 1 || o->nshapes > COVE_POOL_SHAPES_MAX)
		return errf(err, errlen, -EINVAL, "pool: 1 to %d vCPU counts, got %u",
		            COVE_POOL_SHAPES_MAX, o->nshapes);
	for (unsigned int i = 0; i < o->nshapes; i++)
		if (o->cpus[i] < 1 || o->cpus[i] > COVE_CPUS_MAX)
			return errf(err, errlen, -EINVAL,
			            "pool vCPU counts must be from 1 to %d, got %u", COVE_CPUS_MAX,
			            o->cpus[i]);
	struct cove_vmm_pool *p = calloc(1, sizeof(*p));
	if (!p || !(p->vmm = strdup(o->vmm))) {
		free(p);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	p->size = o->size;
	for (unsigned int i = 0; i < o->nshapes; i++)
		if (shape_of(p, o->cpus[i]) < 0)
			p->cpus[p->nshapes++] = o->cpus[i];
	pthread_mutex_init(&p->sh.mu, NULL);
	pthread_cond_init(&p->sh.cond, NULL);
	pthread_cond_init(&p->full, NULL);
	sweep_stale();
	/* The template memory cache's tmpfs is mounted before any member is
	 * spawned: a member's mount namespace is a copy of ours then. */
	char why[256];
	(void)memcache_prepare(why, sizeof(why));
	int r = pthread_create(&p->thread, NULL, refill, p);
	if (r != 0) {
		cove_vmm_pool_free(p);
		return errf(err, errlen, -r, "pool: cannot start its thread: %s", strerror(r));
	}
	p->thread_started = true;
	*out = p;
	return 0;
}

void cove_vmm_pool_stats(struct cove_vmm_pool *p, struct cove_vmm_pool_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (!p)
		return;
	pthread_mutex_lock(&p->sh.mu);
	s->size = p->size;
	for (unsigned int i = 0; i < p->nshapes; i++)
		s->ready += p->nready[i];
	s->hits = p->hits;
	s->misses = p->misses;
	s->spawned = p->spawned;
	s->failed = p->failed;
	snprintf(s->last_error, sizeof(s->last_error), "%s", p->last_error);
	pthread_mutex_unlock(&p->sh.mu);
}

bool cove_vmm_pool_wait_full(struct cove_vmm_pool *p, unsigned int timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	pthread_mutex_lock(&p->sh.mu);
	for (;;) {
		bool full = true;
		for (unsigned int i = 0; i < p->nshapes; i++)
			full &= p->nready[i] >= p->size;
		int64_t left = deadline - mono_ms();
		if (full || left <= 0) {
			pthread_mutex_unlock(&p->sh.mu);
			return full;
		}
		timed_wait(p, &p->full, left > 200 ? 200 : (int)left);
	}
}
