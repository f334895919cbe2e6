/* A pool of sandbox networks set up ahead of time (cove_net_pool_new in
 * cove.h; docs/network.md).  A slot is everything
 * net_setup and net_finish make for a sandbox: the index K and its veth,
 * the namespace with tap0, cove-egress in it with a deny-all policy (mode
 * none) and forwarding on, its uid.  It lives as the pseudo-entry
 * <base>/.np-<hex> (a name no sandbox can have), which holds cove-egress's
 * files and a record "np1 <egress pid> <start> <K> <uid>" (slot), so that
 * a pool whose owner died is cleaned by the next pool made on that base.
 *
 * A sandbox takes a slot (net_pool_take, from sandbox_net_begin): its
 * files move into the entry (renameat: the socket stays bound, the log and
 * error file stay open in cove-egress), the claims of K and of the uid are
 * rewritten to the sandbox's name, cove-egress moves into the sandbox's
 * cgroup, and the sandbox's policy replaces the deny-all one in one
 * transaction (the control socket's "policy" request, as cove net).  What
 * cannot change after cove-egress started falls back to net_setup: publish
 * listeners and DNS upstreams other than the pool's.  A filler thread makes
 * a new slot for each one taken, once no slot was taken for
 * REFILL_QUIET_MS (at once when none is left).  Nothing in a slot belongs to a sandbox
 * before it is taken, and a slot serves one sandbox only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "io.h"
#include "lib/base/cove_types.h"
#include "lib/base/registry.h"
#include "lib/base/sandbox_net.h"
#include "lib/net/egress_ctl.h"
#include "lib/net/net.h"
#include "lib/net/net_addr.h"
#include "lib/net/net_egress.h"
#include "lib/net/net_pool.h"

#define SLOT_PREFIX   ".np-"
#define SLOT_RECORD   "slot"
#define SLOT_NAME_MAX 16
/* A refill waits until no slot was taken for this long (unless none is
 * left): making a slot costs a process start and two nftables
 * transactions, CPU that the sandbox which just took one needs to boot. */
#define REFILL_QUIET_MS 2000

struct net_slot {
	struct sandbox_net n;
	char name[SLOT_NAME_MAX];
	char dir[REGISTRY_DIR_MAX];
	struct net_slot *next;
};

struct cove_net_pool {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct net_slot *ready;
	unsigned int nready, size;
	bool stopping;
	pthread_t filler;
	char base[REGISTRY_DIR_MAX];
	char *egress, **dns; /* copies of the config's */
	struct cove_config cfg;
	atomic_uint hits, misses, failures;
	int64_t last_take_ms; /* under mu */
	char last_err[256];   /* the filler's last failure, under mu */
};

static const char *const slot_files[] = { EGRESS_SOCK, EGRESS_LOG, EGRESS_ERR };

/* Removes the slot's pseudo-entry (its files first); never follows links. */
static void slot_dir_remove(const char *base, const char *name)
{
	int bfd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0)
		return;
	int dfd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0) {
		for (size_t i = 0; i < sizeof(slot_files) / sizeof(slot_files[0]); i++)
			(void)unlinkat(dfd, slot_files[i], 0);
		(void)unlinkat(dfd, SLOT_RECORD, 0);
		close(dfd);
	}
	(void)unlinkat(bfd, name, AT_REMOVEDIR);
	close(bfd);
}

static void slot_destroy(struct cove_net_pool *p, struct net_slot *s)
{
	net_teardown(&s->n, s->name, true);
	slot_dir_remove(p->base, s->name);
	free(s);
}

/* Makes one slot: the pseudo-entry, net_setup with no rules, net_finish. */
static int slot_make(struct cove_net_pool *p, struct net_slot **out, char *err, size_t errlen)
{
	struct net_slot *s = calloc(1, sizeof(*s));
	uint32_t rnd;
	if (!s)
		return errf(err, errlen, -ENOMEM, "out of memory");
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd)) {
		free(s);
		return errf(err, errlen, -EIO, "getrandom: %s", strerror(errno));
	}
	snprintf(s->name, sizeof(s->name), SLOT_PREFIX "%08" PRIx32, rnd);
	if (snprintf(s->dir, sizeof(s->dir), "%s/%s", p->base, s->name) >= (int)sizeof(s->dir)) {
		free(s);
		return errf(err, errlen, -ENAMETOOLONG, "runtime directory %s is too long",
		            p->base);
	}
	if (mkdir(s->dir, 0700) < 0) {
		int e = errno;
		free(s);
		return errf(err, errlen, -e, "cannot create %s: %s", s->dir, strerror(e));
	}
	struct cove_net_policy none = { .mode = COVE_NET_NONE };
	json_t *pj = net_policy_json(&none);
	int r = pj ? net_setup(&s->n, s->dir, s->name, -1, &p->cfg, pj, NULL, err, errlen)
	           : errf(err, errlen, -ENOMEM, "out of memory");
	json_decref(pj);
	if (r < 0) {
		slot_dir_remove(p->base, s->name);
		free(s);
		return r;
	}
	if ((r = net_finish(&s->n, err, errlen)) < 0) {
		slot_destroy(p, s);
		return r;
	}
	char rec[128], path[sizeof(s->dir) + sizeof(SLOT_RECORD) + 1];
	int len = snprintf(rec, sizeof(rec), "np1 %d %" PRIu64 " %u %u\n", (int)s->n.egress_pid,
	                   s->n.egress_start, s->n.index, (unsigned)s->n.uid);
	snprintf(path, sizeof(path), "%s/%s", s->dir, SLOT_RECORD);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	r = fd < 0 ? -errno : write_all(fd, rec, (size_t)len);
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		errf(err, errlen, r, "cannot write %s: %s", path, strerror(-r));
		slot_destroy(p, s);
		return r;
	}
	*out = s;
	return 0;
}

/* A pool that died left slots: kill their cove-egress (checked to be one
 * by its start time), free K and the uid, remove the pseudo-entry.  Only
 * slots whose K is in first..last (this process's $COVE_NET_INDEXES): one
 * of another range is another launcher's on a shared base, maybe alive. */
static void slots_clean_stale(const char *base, unsigned int first, unsigned int last)
{
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, SLOT_PREFIX, strlen(SLOT_PREFIX)) ||
		    strlen(e->d_name) >= SLOT_NAME_MAX)
			continue;
		char path[REGISTRY_DIR_MAX + 2 * SLOT_NAME_MAX], rec[128] = "";
		snprintf(path, sizeof(path), "%s/%s/%s", base, e->d_name, SLOT_RECORD);
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t got = read(fd, rec, sizeof(rec) - 1);
			rec[got > 0 ? got : 0] = 0;
			close(fd);
		}
		struct registry_meta *m = calloc(1, sizeof(*m));
		int pid = 0;
		unsigned int k = 0, uid = 0;
		uint64_t start = 0;
		bool parsed =
		    sscanf(rec, "np1 %d %" SCNu64 " %u %u", &pid, &start, &k, &uid) == 4 && pid > 0;
		if (parsed && (k < first || k > last)) {
			free(m);
			continue;
		}
		if (m && parsed) {
			snprintf(m->name, sizeof(m->name), "%s", e->d_name);
			m->net.on = true;
			m->net.index = k;
			m->net.egress_pid = pid;
			m->net.egress_start = start;
			net_clean_dead(base, m);
			char claim[REGISTRY_DIR_MAX + 24], owner[SLOT_NAME_MAX + 2] = "";
			snprintf(claim, sizeof(claim), "%s/.ids/%u", base, uid);
			int cfd = open(claim, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (cfd >= 0) {
				ssize_t got = read(cfd, owner, sizeof(owner) - 1);
				owner[got > 0 ? got : 0] = 0;
				close(cfd);
				if (!strcmp(owner, e->d_name))
					unlink(claim);
			}
		}
		free(m);
		slot_dir_remove(base, e->d_name);
	}
	closedir(d);
}

/* Waits on the pool's condition until ms (CLOCK_MONOTONIC ms) at most. */
static void wait_until(struct cove_net_pool *p, int64_t ms)
{
	int64_t left = ms - mono_ms();
	if (left <= 0)
		return;
	struct timespec ts = clock_after_ms(CLOCK_REALTIME, left);
	pthread_cond_timedwait(&p->cond, &p->mu, &ts);
}

static void *filler(void *arg)
{
	struct cove_net_pool *p = arg;
	unsigned int backoff_ms = 0;
	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		if (p->nready >= p->size) {
			pthread_cond_wait(&p->cond, &p->mu);
			continue;
		}
		int64_t quiet = p->last_take_ms + REFILL_QUIET_MS;
		if (p->nready > 0 && mono_ms() < quiet) {
			wait_until(p, quiet);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		struct net_slot *s = NULL;
		char err[256] = "";
		int r = slot_make(p, &s, err, sizeof(err));
		pthread_mutex_lock(&p->mu);
		if (r < 0) {
			/* Say why once per failure; wait longer after each (at most
			 * 10 s), so a host without networking is not hammered. */
			atomic_fetch_add(&p->failures, 1);
			snprintf(p->last_err, sizeof(p->last_err), "%s", err);
			backoff_ms =
			    backoff_ms ? (backoff_ms * 2 > 10000 ? 10000 : backoff_ms * 2) : 250;
			if (!p->stopping)
				wait_until(p, mono_ms() + backoff_ms);
			continue;
		}
		backoff_ms = 0;
		if (p->stopping) {
			pthread_mutex_unlock(&p->mu);
			slot_destroy(p, s);
			pthread_mutex_lock(&p->mu);
			break;
		}
		s->next = p->ready;
		p->ready = s;
		p->nready++;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void cove_net_pool_free(struct cove_net_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->mu);
	if (p->filler)
		pthread_join(p->filler, NULL);
	while (p->ready) {
		struct net_slot *s = p->ready;
		p->ready = s->next;
		slot_destroy(p, s);
	}
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->mu);
	for (size_t i = 0; p->dns && p->dns[i]; i++)
		free(p->dns[i]);
	free(p->dns);
	free(p->egress);
	free(p);
}

int cove_net_pool_clean(char *err, size_t errlen)
{
	unsigned int first, last;
	char base[REGISTRY_DIR_MAX];
	int r = net_index_range(&first, &last, err, errlen);
	if (r == 0)
		r = registry_base(base, sizeof(base), err, errlen);
	if (r == 0)
		slots_clean_stale(base, first, last);
	return r;
}

int cove_net_pool_new(const struct cove_config *cfg, unsigned int size, struct cove_net_pool **out,
                      char *err, size_t errlen)
{
	*out = NULL;
	if (size == 0 || size > COVE_NET_POOL_MAX)
		return errf(err, errlen, -EINVAL, "the network pool's size must be 1 to %d, got %u",
		            COVE_NET_POOL_MAX, size);
	struct cove_net_pool *p = calloc(1, sizeof(*p));
	if (!p)
		return errf(err, errlen, -ENOMEM, "out of memory");
	unsigned int first, last;
	int r = net_index_range(&first, &last, err, errlen);
	if (r == 0)
		r = registry_base(p->base, sizeof(p->base), err, errlen);
	if (r < 0) {
		free(p);
		return r;
	}
	p->size = size;
	p->cfg = (struct cove_config){ .detached = true };
	p->egress = cfg->egress ? strdup(cfg->egress) : NULL;
	p->cfg.egress = p->egress;
	size_t ndns = 0;
	while (cfg->net_dns && cfg->net_dns[ndns])
		ndns++;
	if (ndns) {
		p->dns = calloc(ndns + 1, sizeof(*p->dns));
		for (size_t i = 0; p->dns && i < ndns; i++)
			p->dns[i] = strdup(cfg->net_dns[i]);
		p->cfg.net_dns = (const char *const *)p->dns;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cond, NULL);
	slots_clean_stale(p->base, first, last);
	if ((r = pthread_create(&p->filler, NULL, filler, p)) != 0) {
		p->filler = 0;
		cove_net_pool_free(p);
		return errf(err, errlen, -r, "cannot start the network pool's thread: %s",
		            strerror(r));
	}
	*out = p;
	return 0;
}

void cove_net_pool_stats(struct cove_net_pool *p, struct cove_net_pool_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	st->size = p->size;
	st->ready = p->nready;
	snprintf(st->last_error, sizeof(st->last_error), "%s", p->last_err);
	pthread_mutex_unlock(&p->mu);
	st->hits = atomic_load(&p->hits);
	st->misses = atomic_load(&p->misses);
	st->failures = atomic_load(&p->failures);
}

/* Writes name into the claim file path (a temporary beside it, renamed). */
static int claim_rewrite(const char *path, const char *name)
{
	char tmp[PATH_MAX + 16];
	if (snprintf(tmp, sizeof(tmp), "%s.np.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, name, strlen(name));
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* Makes the slot the sandbox's (file head).  On failure the slot is
 * destroyed and the caller sets the network up afresh. */
static int slot_hand(struct net_slot *s, const char *dir, const char *name, int cgroup_fd,
                     json_t *policy, const char *limits, char *err, size_t errlen)
{
	int r;
	for (size_t i = 0; i < sizeof(slot_files) / sizeof(slot_files[0]); i++) {
		char from[REGISTRY_DIR_MAX + 24], to[REGISTRY_DIR_MAX + 24];
		snprintf(from, sizeof(from), "%s/%s", s->dir, slot_files[i]);
		snprintf(to, sizeof(to), "%s/%s", dir, slot_files[i]);
		if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) < 0)
			return errf(err, errlen, -errno, "cannot move %s into %s: %s", from, dir,
			            strerror(errno));
	}
	snprintf(s->n.errlog, sizeof(s->n.errlog), "%s/%s", dir, EGRESS_ERR);
	if ((r = claim_rewrite(s->n.claim, name)) < 0 ||
	    (s->n.uid_claim[0] && (r = claim_rewrite(s->n.uid_claim, name)) < 0))
		return errf(err, errlen, r, "cannot hand the network claims to %s: %s", name,
		            strerror(-r));
	if (cgroup_fd >= 0) {
		char pid[24];
		int len = snprintf(pid, sizeof(pid), "%d", (int)s->n.egress_pid);
		int fd = openat(cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
		r = fd < 0 ? -errno : write_all(fd, pid, (size_t)len);
		if (fd >= 0)
			close(fd);
		if (r < 0)
			return errf(err, errlen, r,
			            "cannot move cove-egress into the sandbox's cgroup: %s",
			            strerror(-r));
	}
	/* Sent now, answered in net_finish: cove-egress swaps its rules while
	 * cove-vmm starts (until then the slot's deny-all ones hold). */
	json_t *req = json_pack("{s:s, s:O}", "op", "policy", "policy", policy);
	char sock[REGISTRY_DIR_MAX + sizeof(EGRESS_SOCK) + 1];
	snprintf(sock, sizeof(sock), "%s/%s", dir, EGRESS_SOCK);
	int fd = -1;
	r = req ? net_ctl_send(sock, req, &fd, err, errlen)
	        : errf(err, errlen, -ENOMEM, "out of memory");
	json_decref(req);
	if (r < 0)
		return r;
	s->n.policy_fd = fd;
	s->n.policy_pending = true;
	snprintf(s->n.limits, sizeof(s->n.limits), "%s", limits ? limits : "");
	return 0;
}

int net_pool_take(struct cove_net_pool *p, const struct cove_config *cfg, const char *dir,
                  const char *name, int cgroup_fd, json_t *policy, const char *limits,
                  struct sandbox_net *out, char *err, size_t errlen)
{
	if (cfg->net_publish && cfg->net_publish[0])
		return -EAGAIN; /* its listeners are cove-egress's from the start */
	for (size_t i = 0;; i++) {
		const char *a = cfg->net_dns ? cfg->net_dns[i] : NULL;
		const char *b = p->dns ? p->dns[i] : NULL;
		if (!a && !b)
			break;
		if (!a || !b || strcmp(a, b))
			return -EAGAIN; /* other upstreams than the pool's */
	}
	for (;;) {
		pthread_mutex_lock(&p->mu);
		struct net_slot *s = p->ready;
		p->last_take_ms = mono_ms();
		if (s) {
			p->ready = s->next;
			p->nready--;
			pthread_cond_broadcast(&p->cond);
		}
		pthread_mutex_unlock(&p->mu);
		if (!s) {
			atomic_fetch_add(&p->misses, 1);
			return -EAGAIN;
		}
		/* A slot whose cove-egress died is no use: the next one. */
		struct pollfd pf = { .fd = s->n.egress_pidfd, .events = POLLIN };
		if (s->n.egress_pidfd < 0 || poll(&pf, 1, 0) != 0) {
			slot_destroy(p, s);
			continue;
		}
		char e[256] = "";
		int r = slot_hand(s, dir, name, cgroup_fd, policy, limits, e, sizeof(e));
		if (r < 0) {
			/* Half handed: undo as the sandbox's (the files and claims
			 * may carry its name now), then set up afresh. */
			net_teardown(&s->n, name, true);
			for (size_t i = 0; i < sizeof(slot_files) / sizeof(slot_files[0]); i++) {
				char path[REGISTRY_DIR_MAX + 24];
				snprintf(path, sizeof(path), "%s/%s", dir, slot_files[i]);
				(void)unlink(path);
			}
			slot_dir_remove(p->base, s->name);
			free(s);
			atomic_fetch_add(&p->misses, 1);
			(void)errf(err, errlen, r, "%s", e);
			return -EAGAIN;
		}
		*out = s->n;
		slot_dir_remove(p->base, s->name);
		free(s);
		atomic_fetch_add(&p->hits, 1);
		return 0;
	}
}
