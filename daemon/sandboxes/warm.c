/* coved's warm pool (warm.h, docs/pool.md "The warm pool").
 *
 * For each template the config's "warm_pool" names, one refill thread
 * keeps that many sandboxes restored and running: each restored as a create
 * of that template with no other field would be (warm_prepare), with
 * a new sandbox id as its registry name, its network (when the template
 * has a NIC) denying everything, and WARM_MARK in its entry so that a
 * coved that died with members running stops them at its next start.
 * They are nobody's: no record, no tenant, not listed; coved's exit stops
 * them.
 *
 * A create whose template directory and network (on or off) match a
 * member's takes it (coved_warm_take) instead of restoring: the id is the
 * member's, the create's policy replaces deny-all (cove_net_set), and a
 * second restore notice (clock, entropy; the guest ran meanwhile) goes out
 * ahead of the first exec on the same connection.  A member is handed out
 * once and never comes back.
 *
 * The thread runs at nice 19 when coved is root, and so do the processes
 * it starts (cove-vmm, cove-egress inherit it); a hand-out puts every
 * thread of both back to 0.  A member idle for WARM_TOUCH_MS is pinged (the
 * agent's and the guest kernel's paths through vsock stay resident); one
 * that does not answer is stopped and replaced.  When a template's
 * directory changes (a rebuild), its members from the old one are stopped
 * and replaced. */
#include "daemon/sandboxes/warm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cove.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/templates.h"
#include "errf.h"

#define WARM_MARK     "coved-warm" /* a file in a member's entry */
#define WARM_TOUCH_MS 30000        /* a member idle this long is pinged */
#define WARM_PING_MS  5000         /* its answer's deadline */
#define WARM_RETRY_MS 5000         /* after a failed restore */
#define WARM_TICK_MS  10000        /* a full pool looks again this often */
#define WARM_CALM_MS  1000         /* no refill this soon after a take, unless none is left */
#define WARM_HOSTNAME "cove"       /* as coved_sb_cove_config's */

struct warm_member {
	struct cove_sandbox *sb;
	char id[COVED_ID_LEN + 1];
	char *tdir;
	bool net;
	size_t slot;
	int64_t touched_ms;
};

struct warm_slot {
	char tid[65];
	unsigned int want;
	char *tdir; /* its template directory as last prepared; NULL: not yet */
	bool net;
	int64_t checked_ms; /* when it was last prepared */
};

struct coved_warm {
	struct coved *d;
	pthread_mutex_t mu;
	pthread_cond_t wake;
	pthread_t thread;
	bool stop;
	struct warm_slot *slots;
	size_t nslots;
	struct warm_member *m;
	size_t nm;
	uint64_t hits, misses, made, failed, replaced;
	int64_t calm_until; /* mono_ms(): the last take's first command runs alone */
	char last_err[600];
};

static bool is_root(void)
{
	return geteuid() == 0;
}

/* Every thread of pid to nice n (root only can lower it). */
static void renice_all(pid_t pid, int n)
{
	if (pid <= 0)
		return;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *dir = opendir(path);
	if (!dir)
		return;
	struct dirent *e;
	while ((e = readdir(dir)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
			(void)setpriority(PRIO_PROCESS, (id_t)atoi(e->d_name), n);
	closedir(dir);
}

void coved_warm_discard(struct cove_sandbox *sb)
{
	if (!sb)
		return;
	(void)cove_stop(sb);
	cove_free(sb);
}

/* Runs `true` in sb: the pages a first command needs (the agent's spawn
 * path, the guest kernel's fork and exec, the binary) are faulted in
 * before a create's command needs them; a restore maps them only as they
 * are touched.  0, or -errno with err. */
static int touch(struct cove_sandbox *sb, char *err, size_t errlen)
{
	static const char *const argv[] = { "true", NULL };
	struct cove_exec_opts o = { .argv = argv, .timeout_ms = WARM_PING_MS, .stdin_fd = -1 };
	struct cove_exec_result res;
	int r = cove_exec(sb, &o, &res, err, errlen);
	if (r == 0 && (res.signal || res.exit_code))
		r = errf(err, errlen, -EIO, "true ended with %s %d",
		         res.signal ? "signal" : "status", res.signal ? res.signal : res.exit_code);
	return r;
}

/* Members already out of the list: stopped and freed. */
static void stop_members(struct warm_member *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		coved_warm_discard(m[i].sb);
		free(m[i].tdir);
	}
}

/* Takes m[i] out of w's list (w->mu held) into *out. */
static void remove_at(struct coved_warm *w, size_t i, struct warm_member *out)
{
	*out = w->m[i];
	w->m[i] = w->m[--w->nm];
}

static size_t ready_of(struct coved_warm *w, size_t slot)
{
	size_t n = 0;
	for (size_t i = 0; i < w->nm; i++)
		n += w->m[i].slot == slot;
	return n;
}

/* What a create of the shared template tid with no other field restores
 * (cfg: coved's defaults, the image *image, malloc'ed; the network
 * deny-all until a create's policy replaces it), and its template
 * directory (*tdir, malloc'ed; held through *lockfd until the restore is
 * done, as a create holds it).  0, or an HTTP status with msg. */
static int warm_prepare(struct coved *d, const char *tid, struct cove_config *cfg, char **image,
                        char **tdir, int *lockfd, char *msg, size_t len)
{
	*tdir = NULL;
	*lockfd = -1;
	int st = coved_template_shared(d, tid, image, msg, len);
	if (st)
		return st;
	cfg->image = *image;
	cfg->cpus = d->cfg.cpus;
	cfg->memory_mib = d->cfg.memory_mib;
	cfg->disk_size = d->cfg.disk_mib << 20;
	/* A default create's network: on when the config allows one. */
	cfg->net =
	    (struct cove_net_policy){ .mode = d->cfg.network ? COVE_NET_OPEN : COVE_NET_OFF };
	st = coved_template_for(d, tid, cfg, false, tdir, lockfd, msg, len);
	if (st == 1)
		st = errf(msg, len, 400, "no template store (templates_dir): nothing to restore");
	if (st) {
		free(*image);
		*image = NULL;
		return st;
	}
	if (cfg->net.mode != COVE_NET_OFF)
		cfg->net.mode = COVE_NET_NONE; /* until a create's policy replaces it */
	return 0;
}

/* Restores one member for slot k (w->mu not held).  0, or -1 with
 * w->last_err set. */
static int make_one(struct coved_warm *w, size_t k)
{
	struct coved *d = w->d;
	struct warm_member nm = { .slot = k };
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	char *image = NULL, *tdir = NULL, msg[600], err[600];
	int lock = -1, r;
	if (coved_new_id(nm.id) < 0) {
		snprintf(w->last_err, sizeof(w->last_err), "getrandom failed");
		return -1;
	}
	cfg.name = nm.id;
	cfg.hostname = WARM_HOSTNAME;
	cfg.detached = true;
	cfg.net_pool = d->net_pool;
	cfg.boot_timeout_ms = d->cfg.boot_timeout_s * 1000;
	/* Spawned from this thread, at its priority: not a VMM pool member,
	 * which would take priority 0 back at its start. */
	cfg.vmm_pool = NULL;
	if (warm_prepare(d, w->slots[k].tid, &cfg, &image, &tdir, &lock, msg, sizeof(msg))) {
		pthread_mutex_lock(&w->mu);
		w->failed++;
		if (strcmp(w->last_err, msg) != 0)
			fprintf(stderr, "coved: warm pool, template '%s': %s\n", w->slots[k].tid,
			        msg);
		snprintf(w->last_err, sizeof(w->last_err), "%s", msg);
		pthread_mutex_unlock(&w->mu);
		return -1;
	}
	nm.net = cfg.net.mode != COVE_NET_OFF;
	/* The template's directory now: members from another one are stale. */
	pthread_mutex_lock(&w->mu);
	struct warm_slot *s = &w->slots[k];
	s->checked_ms = mono_ms();
	bool changed = !s->tdir || strcmp(s->tdir, tdir) != 0 || s->net != nm.net;
	if (changed) {
		free(s->tdir);
		s->tdir = strdup(tdir);
		s->net = nm.net;
	}
	size_t have = 0;
	for (size_t i = 0; i < w->nm; i++)
		if (w->m[i].slot == k && strcmp(w->m[i].tdir, tdir) == 0 && w->m[i].net == nm.net)
			have++;
	pthread_mutex_unlock(&w->mu);
	if (have >= s->want) {
		close(lock);
		free(image);
		free(tdir);
		return 0;
	}
	r = cove_restore(&cfg, tdir, &nm.sb, err, sizeof(err));
	close(lock);
	free(image);
	if (r == 0)
		r = touch(nm.sb, err, sizeof(err));
	if (r == 0) {
		char mark[PATH_MAX];
		snprintf(mark, sizeof(mark), "%s/" WARM_MARK, cove_sandbox_dir(nm.sb));
		int fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			r = errf(err, sizeof(err), -errno, "%s: %s", mark, strerror(errno));
		else
			close(fd);
	}
	pthread_mutex_lock(&w->mu);
	if (r < 0) {
		w->failed++;
		if (strcmp(w->last_err, err) != 0)
			fprintf(stderr, "coved: warm pool, template '%s': %s\n", s->tid, err);
		snprintf(w->last_err, sizeof(w->last_err), "%s", err);
	} else {
		nm.tdir = tdir;
		tdir = NULL;
		nm.touched_ms = mono_ms();
		struct warm_member *grown = realloc(w->m, (w->nm + 1) * sizeof(*w->m));
		if (grown) {
			w->m = grown;
			w->m[w->nm++] = nm;
			nm.sb = NULL;
			w->made++;
		}
	}
	pthread_mutex_unlock(&w->mu);
	if (nm.sb) { /* out of memory for the list */
		coved_warm_discard(nm.sb);
		r = -ENOMEM;
	}
	free(tdir);
	return r < 0 ? -1 : 0;
}

/* Stops members of a template whose directory changed, and pings those
 * idle for WARM_TOUCH_MS (one that does not answer is stopped). */
static void tend(struct coved_warm *w)
{
	struct warm_member *drop = NULL;
	size_t ndrop = 0;
	int64_t now = mono_ms();
	pthread_mutex_lock(&w->mu);
	drop = calloc(w->nm ? w->nm : 1, sizeof(*drop));
	for (size_t i = 0; drop && i < w->nm;) {
		struct warm_slot *s = &w->slots[w->m[i].slot];
		if (s->tdir && (strcmp(s->tdir, w->m[i].tdir) != 0 || s->net != w->m[i].net)) {
			remove_at(w, i, &drop[ndrop++]);
			w->replaced++;
			continue;
		}
		i++;
	}
	/* The ones to ping, taken out while it runs (a create cannot take
	 * a member being pinged) and put back after. */
	struct warm_member *ping = calloc(w->nm ? w->nm : 1, sizeof(*ping));
	size_t nping = 0;
	for (size_t i = 0; ping && i < w->nm;) {
		if (now - w->m[i].touched_ms >= WARM_TOUCH_MS) {
			remove_at(w, i, &ping[nping++]);
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&w->mu);
	for (size_t i = 0; i < nping; i++) {
		char err[256];
		if (touch(ping[i].sb, err, sizeof(err)) < 0) {
			fprintf(stderr, "coved: warm sandbox %s did not answer (%s): replaced\n",
			        ping[i].id, err);
			stop_members(&ping[i], 1);
			ping[i].sb = NULL;
			pthread_mutex_lock(&w->mu);
			w->replaced++;
			pthread_mutex_unlock(&w->mu);
			continue;
		}
		ping[i].touched_ms = mono_ms();
		pthread_mutex_lock(&w->mu);
		struct warm_member *grown = realloc(w->m, (w->nm + 1) * sizeof(*w->m));
		if (grown) {
			w->m = grown;
			w->m[w->nm++] = ping[i];
			ping[i].sb = NULL;
		}
		pthread_mutex_unlock(&w->mu);
		if (ping[i].sb)
			stop_members(&ping[i], 1);
	}
	free(ping);
	stop_members(drop, ndrop);
	free(drop);
}

static void *refill(void *arg)
{
	struct coved_warm *w = arg;
	/* Behind every running sandbox; what this thread starts inherits it. */
	if (is_root())
		(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		bool short_of = false, failed = false;
		int64_t calm = w->calm_until - mono_ms();
		for (size_t k = 0; k < w->nslots && !w->stop; k++) {
			size_t ready = ready_of(w, k);
			if (ready >= w->slots[k].want && w->slots[k].tdir &&
			    mono_ms() - w->slots[k].checked_ms < WARM_TICK_MS)
				continue;
			/* A refill would share the CPU with the sandbox just
			 * taken, whose first command comes now: it waits a
			 * moment, unless none is left. */
			if (ready > 0 && calm > 0) {
				short_of = true;
				continue;
			}
			pthread_mutex_unlock(&w->mu);
			failed |= make_one(w, k) < 0;
			pthread_mutex_lock(&w->mu);
			short_of |= ready_of(w, k) < w->slots[k].want;
		}
		pthread_mutex_unlock(&w->mu);
		tend(w);
		pthread_mutex_lock(&w->mu);
		if (w->stop)
			break;
		int64_t ms = failed ? WARM_RETRY_MS : calm > 0 ? calm : short_of ? 0 : WARM_TICK_MS;
		if (ms == 0)
			continue;
		struct timespec ts = clock_after_ms(CLOCK_MONOTONIC, ms);
		/* A template rebuilt meanwhile is seen when it is prepared
		 * again, at least every WARM_TICK_MS. */
		pthread_cond_timedwait(&w->wake, &w->mu, &ts);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Members a coved before this one left running (WARM_MARK in their
 * entries): stopped. */
static void sweep(void)
{
	struct cove_info *list;
	size_t n;
	char err[512];
	if (cove_list(&list, &n, err, sizeof(err)) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		if (list[i].state == COVE_STATE_DEAD)
			continue;
		struct cove_sandbox *sb;
		if (cove_open(list[i].name, &sb, err, sizeof(err)) < 0)
			continue;
		char mark[PATH_MAX];
		snprintf(mark, sizeof(mark), "%s/" WARM_MARK, cove_sandbox_dir(sb));
		if (access(mark, F_OK) == 0) {
			fprintf(stderr,
			        "coved: stopping warm sandbox %s, left by an earlier coved\n",
			        list[i].name);
			(void)cove_stop(sb);
		}
		cove_free(sb);
	}
	cove_list_free(list, n);
}

int coved_warm_start(struct coved *d, char *err, size_t errlen)
{
	sweep();
	size_t n = 0;
	const char *tid;
	json_t *v;
	json_object_foreach(d->cfg.warm_pool, tid, v) n += json_integer_value(v) > 0;
	if (!n)
		return 0;
	struct coved_warm *w = calloc(1, sizeof(*w));
	if (!w || !(w->slots = calloc(n, sizeof(*w->slots)))) {
		free(w);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	w->d = d;
	json_object_foreach(d->cfg.warm_pool, tid, v)
	{
		if (json_integer_value(v) <= 0)
			continue;
		struct warm_slot *s = &w->slots[w->nslots++];
		snprintf(s->tid, sizeof(s->tid), "%s", tid);
		s->want = (unsigned int)json_integer_value(v);
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&w->thread, NULL, refill, w) != 0) {
		free(w->slots);
		free(w);
		return errf(err, errlen, -EAGAIN, "cannot start the warm pool's thread");
	}
	d->warm = w;
	return 0;
}

void coved_warm_stop(struct coved *d)
{
	struct coved_warm *w = d->warm;
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	stop_members(w->m, w->nm);
	free(w->m);
	for (size_t k = 0; k < w->nslots; k++)
		free(w->slots[k].tdir);
	free(w->slots);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->wake);
	free(w);
	d->warm = NULL;
}

struct cove_sandbox *coved_warm_take(struct coved *d, const char *tdir, bool net,
                                     char id[COVED_ID_LEN + 1])
{
	struct coved_warm *w = d->warm;
	if (!w)
		return NULL;
	struct cove_sandbox *sb = NULL;
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < w->nm; i++) {
		if (w->m[i].net != net || strcmp(w->m[i].tdir, tdir) != 0)
			continue;
		struct warm_member m;
		remove_at(w, i, &m);
		sb = m.sb;
		memcpy(id, m.id, COVED_ID_LEN + 1);
		free(m.tdir);
		w->hits++;
		break;
	}
	if (!sb)
		for (size_t k = 0; k < w->nslots; k++)
			if (w->slots[k].tdir && w->slots[k].net == net &&
			    strcmp(w->slots[k].tdir, tdir) == 0) {
				w->misses++;
				break;
			}
	if (sb) {
		w->calm_until = mono_ms() + WARM_CALM_MS;
		pthread_cond_signal(&w->wake); /* one to make, soon */
	}
	pthread_mutex_unlock(&w->mu);
	return sb;
}

int coved_warm_handout(struct coved *d, struct cove_sandbox *sb, const struct cove_net_policy *pol,
                       char *err, size_t errlen)
{
	/* A sandbox now: no later coved may take it for a leftover member. */
	char mark[PATH_MAX];
	snprintf(mark, sizeof(mark), "%s/" WARM_MARK, cove_sandbox_dir(sb));
	if (unlink(mark) < 0 && errno != ENOENT)
		return errf(err, errlen, -errno, "%s: %s", mark, strerror(errno));
	if (is_root()) {
		renice_all(cove_vmm_pid(sb), 0);
		renice_all(sb->net.on ? sb->net.egress_pid : 0, 0);
	}
	int r;
	if (pol->mode != COVE_NET_OFF && pol->mode != COVE_NET_NONE &&
	    (r = cove_net_set(sb, pol, err, errlen)) < 0)
		return r;
	/* The clock and entropy again: the guest ran since its restore. */
	unsigned int ms = d->cfg.boot_timeout_s * 1000;
	int fd = agent_connect_until(sb, mono_ms() + ms, err, errlen);
	if (fd < 0)
		return fd;
	return notice_begin(sb, fd, WARM_HOSTNAME, ms, err, errlen);
}

void coved_warm_metrics(struct coved *d, FILE *f)
{
	struct coved_warm *w = d->warm;
	unsigned long long want = 0, ready = 0, hits = 0, misses = 0, made = 0, failed = 0,
	                   replaced = 0;
	if (w) {
		pthread_mutex_lock(&w->mu);
		for (size_t k = 0; k < w->nslots; k++)
			want += w->slots[k].want;
		ready = w->nm;
		hits = w->hits;
		misses = w->misses;
		made = w->made;
		failed = w->failed;
		replaced = w->replaced;
		pthread_mutex_unlock(&w->mu);
	}
	fprintf(f,
	        "# HELP coved_warm_size Restored sandboxes the warm pool keeps (warm_pool).\n"
	        "# TYPE coved_warm_size gauge\ncoved_warm_size %llu\n"
	        "# HELP coved_warm_ready Restored sandboxes ready in the warm pool now.\n"
	        "# TYPE coved_warm_ready gauge\ncoved_warm_ready %llu\n"
	        "# HELP coved_warm_hits_total Creates handed a warm sandbox.\n"
	        "# TYPE coved_warm_hits_total counter\ncoved_warm_hits_total %llu\n"
	        "# HELP coved_warm_misses_total Creates of a warm template that found none "
	        "ready.\n"
	        "# TYPE coved_warm_misses_total counter\ncoved_warm_misses_total %llu\n"
	        "# HELP coved_warm_made_total Warm sandboxes restored.\n"
	        "# TYPE coved_warm_made_total counter\ncoved_warm_made_total %llu\n"
	        "# HELP coved_warm_failed_total Warm sandboxes that failed to restore.\n"
	        "# TYPE coved_warm_failed_total counter\ncoved_warm_failed_total %llu\n"
	        "# HELP coved_warm_replaced_total Warm sandboxes stopped unused (a rebuilt "
	        "template, no answer).\n"
	        "# TYPE coved_warm_replaced_total counter\ncoved_warm_replaced_total %llu\n",
	        want, ready, hits, misses, made, failed, replaced);
}
