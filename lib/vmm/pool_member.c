/* One member of the VMM pool (pool.c tells the whole): its spawn and its
 * hand-over to a sandbox. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "io.h"
#include "lib/base/cgroup.h"
#include "lib/base/handle.h"
#include "lib/base/jail.h"
#include "lib/base/registry.h"
#include "lib/base/text.h"
#include "lib/vmm/pool_member.h"
#include "lib/vmm/vmm_proc.h"

#define POOL_READY_MS  20000 /* a member says ready within this */
#define POOL_REPLY_MAX 1024

/* ---- one member ---- */

bool pool_member_alive(const struct pool_member *pm)
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

struct pool_member *pool_member_spawn(struct pool_shared *sh, const char *vmm, unsigned int cpus,
                                      char *err, size_t errlen)
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
	pm->pool = sh;
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
	const char *argv[] = { vmm, "--pool", ncpu, "--api", api, NULL };
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
			struct pool_shared *p = pm->pool;
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
