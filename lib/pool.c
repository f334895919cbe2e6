/* The VMM pool (cove.h, docs/ARCHITECTURE.md "The VMM pool"): pre-spawned
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
#include "io.h"
#include "libcove.h"
#include "memcache.h"
#include "text.h"

#define POOL_READY_MS   20000 /* a member says ready within this */
#define POOL_BACKOFF_MS 1000  /* after a failed spawn */
#define POOL_REPLY_MAX  1024
#define POOL_PREFIX     ".pool-"

struct pool_member {
	struct pool_member *next;
	struct cove_vmm_pool *pool;
	unsigned int cpus;
	pid_t pid;
	int pidfd;                  /* -1 once handed to a sandbox */
	int conn;                   /* the connection to its control socket */
	bool moved;                 /* root/ and vmm.log went to a sandbox */
	int64_t t_taken, t_adopted; /* mono_ns at pool_take and after pool_adopt_jail */
	char dir[REGISTRY_DIR_MAX];
	char root[REGISTRY_DIR_MAX + 6];
	char log[REGISTRY_DIR_MAX + 10];
	struct sandbox_jail jail;
};

struct cove_vmm_pool {
	pthread_mutex_t mu;
	pthread_cond_t cond; /* refill: a member was taken, or stop */
	pthread_cond_t full; /* a member was added */
	char *vmm;
	unsigned int size, nshapes;
	unsigned int cpus[COVE_POOL_SHAPES_MAX];
	struct pool_member *ready[COVE_POOL_SHAPES_MAX];
	unsigned int nready[COVE_POOL_SHAPES_MAX];
	uint64_t hits, misses, spawned, failed;
	char last_error[256];
	/* Member cgroups left empty by hand-overs: removed by the refill
	 * thread (an rmdir may be refused for a moment after the move). */
	char *stale_cg[COVE_POOL_SIZE_MAX * COVE_POOL_SHAPES_MAX];
	unsigned int nstale;
	bool stopping;
	pthread_t thread;
	bool thread_started;
};

/* ---- one member ---- */

static bool member_alive(const struct pool_member *pm)
{
	struct pollfd p[2] = { { .fd = pm->pidfd, .events = POLLIN },
		               { .fd = pm->conn, .events = POLLIN } };
	/* It says nothing after "ready": anything readable is its end. */
	return poll(p, 2, 0) == 0;
}

/* Ends a member that was not handed out (or whose hand-over failed) and
 * removes what is left of it. */
void pool_member_free(struct pool_member *pm)
{
	if (!pm)
		return;
	if (pm->conn >= 0)
		close(pm->conn); /* it exits on EOF */
	if (pm->pidfd >= 0) {
		if (!fd_wait_readable(pm->pidfd, 1000)) {
			(void)syscall(SYS_pidfd_send_signal, pm->pidfd, SIGKILL, NULL, 0);
			(void)fd_wait_readable(pm->pidfd, 2000);
		}
		close(pm->pidfd);
		jail_release(&pm->jail);
	} else if (pm->jail.cgroup_fd >= 0) {
		close(pm->jail.cgroup_fd);
	}
	if (pm->dir[0])
		registry_remove_tree(pm->dir);
	free(pm);
}

/* Connects to the member's control socket and reads its ready line. */
static int member_connect(struct pool_member *pm, const char *api, char *err, size_t errlen)
{
	int64_t deadline = mono_ms() + POOL_READY_MS;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(api) >= sizeof(sa.sun_path))
		return errf(err, errlen, -ENAMETOOLONG, "pool: %s is too long for a socket", api);
	strcpy(sa.sun_path, api);
	/* Until it listens: retries 1 ms apart at first, then up to 20 ms (a
	 * member takes a second or more to come up; no busy loop meanwhile). */
	int pause_ms = 1;
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return errf(err, errlen, -errno, "socket: %s", strerror(errno));
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			pm->conn = fd;
			break;
		}
		int e = errno;
		close(fd);
		if (e != ENOENT && e != ECONNREFUSED)
			return errf(err, errlen, -e, "pool: cannot reach %s: %s", api, strerror(e));
		if (fd_wait_readable(pm->pidfd, pause_ms)) {
			char why[256];
			vmm_log_tail(pm->log, why, sizeof(why));
			return errf(err, errlen, -ECHILD, "pool: cove-vmm --pool exited: %s",
			            why[0] ? why : "(no output)");
		}
		if (mono_ms() >= deadline)
			return errf(err, errlen, -ETIMEDOUT,
			            "pool: cove-vmm --pool did not listen within %d ms",
			            POOL_READY_MS);
		pause_ms = pause_ms < 20 ? pause_ms * 2 : 20;
	}
	char line[128];
	size_t got = 0;
	while (got < sizeof(line) - 1) {
		int64_t left = deadline - mono_ms();
		if (left <= 0 || !fd_wait_readable(pm->conn, (int)left))
			return errf(err, errlen, -ETIMEDOUT,
			            "pool: cove-vmm --pool was not ready "
			            "within %d ms",
			            POOL_READY_MS);
		ssize_t n = read(pm->conn, line + got, 1);
		if (n <= 0) {
			char why[256];
			(void)fd_wait_readable(pm->pidfd, 200);
			vmm_log_tail(pm->log, why, sizeof(why));
			return errf(err, errlen, -ECHILD, "pool: cove-vmm --pool ended: %s",
			            why[0] ? why : "(no output)");
		}
		if (line[got] == '\n')
			break;
		got++;
	}
	line[got] = 0;
	if (strncmp(line, "{\"ok\":true,\"pool\":\"ready\"", 25))
		return errf(err, errlen, -EPROTO, "pool: unexpected greeting from cove-vmm --pool");
	return 0;
}

static struct pool_member *member_spawn(const struct cove_vmm_pool *p, unsigned int cpus, char *err,
                                        size_t errlen)
{
	char base[REGISTRY_DIR_MAX - 16];
	if (registry_base(base, sizeof(base), err, errlen) < 0)
		return NULL;
	struct pool_member *pm = calloc(1, sizeof(*pm));
	struct cove_sandbox *msb = sandbox_new(true);
	if (!pm || !msb) {
		free(pm);
		free(msb);
		errf(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	pm->cpus = cpus;
	pm->pool = (struct cove_vmm_pool *)p;
	pm->pidfd = pm->conn = -1;
	pm->jail.cgroup_fd = -1;
	char dir[REGISTRY_DIR_MAX];
	snprintf(dir, sizeof(dir), "%s/" POOL_PREFIX "XXXXXX", base);
	if (!mkdtemp(dir)) {
		errf(err, errlen, -errno, "pool: cannot create a member directory in %s: %s", base,
		     strerror(errno));
		free(pm);
		free(msb);
		return NULL;
	}
	snprintf(pm->dir, sizeof(pm->dir), "%s", dir);
	const char *name = strrchr(pm->dir, '/') + 1;
	snprintf(pm->root, sizeof(pm->root), "%s/" JAIL_ROOT_DIR, pm->dir);
	snprintf(pm->log, sizeof(pm->log), "%s/vmm.log", pm->dir);
	/* The member's own cgroup until it is taken: its few threads and the
	 * KVM VM's kernel memory; the sandbox's limits come with the claim. */
	struct cgroup_limits lim = { .memory_bytes = 128ULL << 20,
		                     .pids_max = cpus + CGROUP_PIDS_SPARE };
	msb->pool_member = true;
	snprintf(msb->dir, sizeof(msb->dir), "%s", pm->dir);
	snprintf(msb->name, sizeof(msb->name), "%s", name);
	snprintf(msb->root, sizeof(msb->root), "%s", pm->root);
	char api[sizeof(pm->root) + 16], ncpu[16];
	snprintf(api, sizeof(api), "%s/api.sock", pm->root);
	snprintf(ncpu, sizeof(ncpu), "%u", cpus);
	const char *argv[] = { p->vmm, "--pool", ncpu, "--api", api, NULL };
	int r = mkdir(pm->root, 0700) < 0 ? errf(err, errlen, -errno, "pool: cannot create %s: %s",
	                                         pm->root, strerror(errno))
	                                  : 0;
	if (r == 0)
		r = jail_prepare(&msb->jail, msb->dir, msb->name, msb->root, &lim, err, errlen);
	pm->jail = msb->jail;
	if (r == 0)
		r = vmm_spawn((char *const *)argv, true, pm->log, msb, err, errlen);
	pm->jail = msb->jail; /* vmm_spawn may have learnt there is no user namespace */
	pm->pidfd = msb->pidfd;
	pm->pid = msb->pid;
	free(msb);
	if (r == 0)
		r = member_connect(pm, api, err, errlen);
	if (r < 0) {
		if (pm->pidfd < 0)
			jail_release(&pm->jail);
		pool_member_free(pm);
		return NULL;
	}
	return pm;
}

/* ---- handing a member to a sandbox ---- */

int pool_adopt_root(struct pool_member *pm, struct cove_sandbox *sb, const char *log, char *err,
                    size_t errlen)
{
	/* sb->root was just made, empty: the member's takes its place. */
	if (rmdir(sb->root) < 0)
		return errf(err, errlen, -errno, "pool: cannot replace %s: %s", sb->root,
		            strerror(errno));
	if (renameat2(AT_FDCWD, pm->root, AT_FDCWD, sb->root, RENAME_NOREPLACE) < 0) {
		int e = errno;
		(void)mkdir(sb->root, 0700);
		return errf(err, errlen, -e, "pool: cannot move %s to %s: %s", pm->root, sb->root,
		            strerror(e));
	}
	pm->moved = true;
	if (rename(pm->log, log) < 0)
		return errf(err, errlen, -errno, "pool: cannot move %s to %s: %s", pm->log, log,
		            strerror(errno));
	return 0;
}

/* The uid claim file names its sandbox: now sb. */
static int claim_rename(const char *claim, const char *name)
{
	char tmp[PATH_MAX + 32];
	const char *slash = strrchr(claim, '/');
	if (!slash)
		return -EINVAL;
	/* A dot name: claim scans skip it. */
	snprintf(tmp, sizeof(tmp), "%.*s/.%s.%d.tmp", (int)(slash - claim), claim, slash + 1,
	         (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, name, strlen(name));
	close(fd);
	if (r == 0 && rename(tmp, claim) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int pool_adopt_jail(struct pool_member *pm, struct cove_sandbox *sb,
                    const struct cgroup_limits *lim, const char *log, char *err, size_t errlen)
{
	sb->jail = pm->jail;
	pm->jail.claim[0] = 0;
	pm->jail.cgroup[0] = 0;
	pm->jail.cgroup_fd = -1;
	/* From here sb owns the process: sandbox_finish ends it. */
	sb->pidfd = pm->pidfd;
	sb->pid = pm->pid;
	sb->child = false;
	pm->pidfd = -1;
	int r;
	if (sb->jail.claim[0] && (r = claim_rename(sb->jail.claim, sb->name)) < 0)
		return errf(err, errlen, r, "pool: cannot give the uid claim %s to %s: %s",
		            sb->jail.claim, sb->name, strerror(-r));
	if (sb->jail.cgroup[0]) {
		char old[PATH_MAX], note[320] = "";
		snprintf(old, sizeof(old), "%s", sb->jail.cgroup);
		close(sb->jail.cgroup_fd);
		sb->jail.cgroup_fd = -1;
		sb->jail.cgroup[0] = 0;
		r = cgroup_create(sb->name, lim, &sb->jail.cgroup_fd, sb->jail.cgroup,
		                  sizeof(sb->jail.cgroup), note, sizeof(note), err, errlen);
		if (r == 0 && (r = cgroup_move(sb->jail.cgroup, sb->pid)) < 0)
			errf(err, errlen, r, "pool: cannot move cove-vmm into %s: %s",
			     sb->jail.cgroup, strerror(-r));
		if (r != 0) {
			/* The member stays where it was: its cgroup goes with it. */
			if (sb->jail.cgroup_fd >= 0)
				close(sb->jail.cgroup_fd);
			sb->jail.cgroup_fd = -1;
			cgroup_remove(sb->jail.cgroup);
			snprintf(sb->jail.cgroup, sizeof(sb->jail.cgroup), "%s", old);
			return r < 0 ? r : errf(err, errlen, -EIO, "pool: %s", note);
		}
		/* Once, without waiting: a refused rmdir is the refill thread's. */
		if (rmdir(old) < 0 && errno == EBUSY && pm->pool) {
			struct cove_vmm_pool *p = pm->pool;
			pthread_mutex_lock(&p->mu);
			char *copy = p->nstale < sizeof(p->stale_cg) / sizeof(p->stale_cg[0])
			                 ? strdup(old)
			                 : NULL;
			if (copy)
				p->stale_cg[p->nstale++] = copy;
			pthread_cond_signal(&p->cond);
			pthread_mutex_unlock(&p->mu);
		}
	}
	vmm_log_confinement(sb, log);
	pm->t_adopted = (int64_t)mono_ns();
	return 0;
}

int pool_start(struct pool_member *pm, struct cove_sandbox *sb, char *const argv[],
               unsigned int timeout_ms, char *err, size_t errlen)
{
	json_t *av = json_array();
	for (size_t i = 1; argv[i]; i++)
		json_array_append_new(av, json_string(argv[i]));
	char uid[16];
	if (sb->jail.namespaces) {
		json_array_append_new(av, json_string("--jail"));
		json_array_append_new(av, json_string(sb->root));
		if (sb->jail.ids) {
			snprintf(uid, sizeof(uid), "%u", (unsigned)sb->jail.uid);
			json_array_append_new(av, json_string("--jail-uid"));
			json_array_append_new(av, json_string(uid));
		}
	}
	json_t *req = json_pack("{s:s, s:o}", "op", "start", "argv", av);
	char *line = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!line)
		return errf(err, errlen, -ENOMEM, "out of memory");
	size_t n = strlen(line);
	line[n] = '\n'; /* json_dumps' NUL becomes the newline: sent as n + 1 bytes */
	/* A sandbox with a network: its TAP goes with the request (fd 3 of
	 * "--net fd=3" in a spawned VMM). */
	struct iovec iov = { .iov_base = line, .iov_len = n + 1 };
	char ctl[CMSG_SPACE(sizeof(int))];
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (sb->net.on && sb->net.tap_fd >= 0) {
		memset(ctl, 0, sizeof(ctl));
		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &sb->net.tap_fd, sizeof(int));
	}
	ssize_t w = sendmsg(pm->conn, &mh, MSG_NOSIGNAL);
	free(line);
	if (w != (ssize_t)(n + 1))
		return errf(err, errlen, -EIO, "pool: cannot send the start request: %s",
		            w < 0 ? strerror(errno) : "short write");
	/* The answer comes once the guest runs (or the start failed). */
	int64_t deadline = mono_ms() + timeout_ms;
	char buf[POOL_REPLY_MAX];
	size_t got = 0;
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return errf(err, errlen, -ETIMEDOUT,
			            "the pooled cove-vmm did not start within %u ms", timeout_ms);
		if (!fd_wait_readable(pm->conn, (int)left))
			continue;
		ssize_t k = read(pm->conn, buf + got, sizeof(buf) - 1 - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			char why[400], logp[PATH_MAX];
			(void)fd_wait_readable(sb->pidfd, 500);
			snprintf(logp, sizeof(logp), "%s/vmm.log", sb->dir);
			vmm_log_tail(pm->moved ? logp : pm->log, why, sizeof(why));
			text_clean(why);
			return errf(err, errlen, -ECHILD, "the pooled cove-vmm exited: %s",
			            why[0] ? why : "(no output)");
		}
		got += (size_t)k;
		buf[got] = 0;
		if (strchr(buf, '\n') || got == sizeof(buf) - 1)
			break;
	}
	buf[strcspn(buf, "\n")] = 0;
	json_t *o = json_loads(buf, 0, NULL);
	json_t *ok = o ? json_object_get(o, "ok") : NULL;
	int r = 0;
	if (!json_is_true(ok)) {
		const char *e = o ? json_string_value(json_object_get(o, "error")) : NULL;
		char why[400];
		snprintf(why, sizeof(why), "%s", e ? e : "a malformed answer");
		text_clean(why);
		r = errf(err, errlen, -EIO, "cove-vmm: %s", why);
	}
	json_decref(o);
	/* For benchmarks: where the hand-over's time went. */
	char logp[PATH_MAX];
	snprintf(logp, sizeof(logp), "%s/vmm.log", sb->dir);
	int lf = r == 0 ? open(logp, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (lf >= 0) {
		int64_t now = (int64_t)mono_ns();
		(void)!dprintf(lf,
		               "cove: pool: taken %s; moved and confined in %.2f ms, started in "
		               "%.2f ms\n",
		               strrchr(pm->dir, '/') + 1,
		               (double)(pm->t_adopted - pm->t_taken) / 1e6,
		               (double)(now - pm->t_adopted) / 1e6);
		close(lf);
	}
	return r;
}

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
			if (member_alive(pm)) {
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
	pthread_cond_timedwait(c, &p->mu, &ts);
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
	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		for (unsigned int i = 0; i < p->nstale;) {
			if (rmdir(p->stale_cg[i]) == 0 || errno != EBUSY) {
				free(p->stale_cg[i]);
				p->stale_cg[i] = p->stale_cg[--p->nstale];
			} else {
				i++;
			}
		}
		struct pool_member *dead = prune(p);
		if (dead) {
			pthread_mutex_unlock(&p->mu);
			free_list(dead);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		int shape = -1;
		for (unsigned int i = 0; i < p->nshapes && shape < 0; i++)
			if (p->nready[i] < p->size)
				shape = (int)i;
		if (shape < 0) {
			timed_wait(p, &p->cond, p->nstale ? 100 : 1000);
			continue;
		}
		unsigned int cpus = p->cpus[shape];
		pthread_mutex_unlock(&p->mu);
		char err[256];
		struct pool_member *pm = member_spawn(p, cpus, err, sizeof(err));
		pthread_mutex_lock(&p->mu);
		if (!pm) {
			p->failed++;
			snprintf(p->last_error, sizeof(p->last_error), "%s", err);
			timed_wait(p, &p->cond, POOL_BACKOFF_MS);
			continue;
		}
		p->spawned++;
		pm->next = p->ready[shape];
		p->ready[shape] = pm;
		p->nready[shape]++;
		pthread_cond_broadcast(&p->full);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct pool_member *pool_take(struct cove_vmm_pool *p, unsigned int cpus)
{
	if (!p)
		return NULL;
	pthread_mutex_lock(&p->mu);
	int shape = shape_of(p, cpus);
	struct pool_member *pm = NULL, *dead = NULL;
	while (shape >= 0 && p->ready[shape] && !pm) {
		pm = p->ready[shape];
		p->ready[shape] = pm->next;
		p->nready[shape]--;
		pm->next = NULL;
		if (!member_alive(pm)) {
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
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->mu);
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
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cond, NULL);
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
	pthread_mutex_lock(&p->mu);
	s->size = p->size;
	for (unsigned int i = 0; i < p->nshapes; i++)
		s->ready += p->nready[i];
	s->hits = p->hits;
	s->misses = p->misses;
	s->spawned = p->spawned;
	s->failed = p->failed;
	snprintf(s->last_error, sizeof(s->last_error), "%s", p->last_error);
	pthread_mutex_unlock(&p->mu);
}

bool cove_vmm_pool_wait_full(struct cove_vmm_pool *p, unsigned int timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		bool full = true;
		for (unsigned int i = 0; i < p->nshapes; i++)
			full &= p->nready[i] >= p->size;
		int64_t left = deadline - mono_ms();
		if (full || left <= 0) {
			pthread_mutex_unlock(&p->mu);
			return full;
		}
		timed_wait(p, &p->full, left > 200 ? 200 : (int)left);
	}
}

void cove_vmm_pool_free(struct cove_vmm_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->mu);
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
	for (unsigned int i = 0; i < p->nstale; i++) {
		cgroup_remove(p->stale_cg[i]);
		free(p->stale_cg[i]);
	}
	pthread_cond_destroy(&p->cond);
	pthread_cond_destroy(&p->full);
	pthread_mutex_destroy(&p->mu);
	free(p->vmm);
	free(p);
}
