/* cove-egress as a process (net_egress.h): its files (config memfd, control
 * socket, decision log, ready pipe, publish listeners), its spawn into new
 * user, net, mount, PID, IPC and UTS namespaces and the sandbox's cgroup,
 * its uid/gid maps, its config, its readiness and its stop. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "io.h"
#include "lib/base/cove_types.h"
#include "lib/base/sandbox_net.h"
#include "lib/base/spawn.h"
#include "lib/base/text.h"
#include "lib/net/egress_ctl.h"
#include "lib/net/net_addr.h"
#include "lib/net/net_egress.h"

/* The last non-empty line of a small file (cove-egress's own output). */
static void last_line(const char *path, char *out, size_t len)
{
	char buf[4096];
	out[0] = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t size = lseek(fd, 0, SEEK_END);
	off_t at = size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, at);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	char *nl = strrchr(buf, '\n');
	const char *line = nl ? nl + 1 : buf;
	size_t k = strlen(line) < len ? strlen(line) : len - 1;
	memcpy(out, line, k);
	out[k] = 0;
}

/* In the child: wait for the go (the maps are written then), become uid
 * 0 of its user namespace, put the fds in place, exec.  Async-signal-safe
 * calls only.  #syscalls: setresgid setgroups setresuid execveat */
static void exec_egress(const struct egress_plan *p)
{
	char c;
	if (p->die_with_parent)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (read(p->go, &c, 1) != 1)
		_exit(127);
	/* Raw calls: glibc's would broadcast to threads that the caller may
	 * have had and this child has not. */
	if (syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setgroups, 0, NULL) < 0 ||
	    syscall(SYS_setresuid, 0, 0, 0) < 0)
		_exit(126);
	if (p->die_with_parent)
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* cleared by the uid change */
	int hi[4 + NET_PUBLISH_MAX];
	int exe = fcntl(p->exe, F_DUPFD_CLOEXEC, 200);
	int out = fcntl(p->out, F_DUPFD_CLOEXEC, 200);
	for (int i = 0; i < p->nfds; i++)
		hi[i] = fcntl(p->fds[i], F_DUPFD_CLOEXEC, 200);
	int null = open("/dev/null", O_RDWR);
	if (exe < 0 || out < 0 || null < 0)
		_exit(127);
	dup2(null, 0);
	dup2(out, 1);
	dup2(out, 2);
	for (int i = 0; i < p->nfds; i++)
		if (hi[i] < 0 || dup2(hi[i], FD_CONFIG + i) < 0)
			_exit(127);
	(void)syscall(SYS_close_range, (unsigned)(FD_CONFIG + p->nfds), ~0U, CLOSE_RANGE_CLOEXEC);
	spawn_signals_default();
	static char *const argv[] = { "cove-egress", "--config-fd", "3", NULL };
	static char *const envp[] = { NULL };
	syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
	_exit(127);
}

static pid_t clone_egress(const struct egress_plan *p, int *pidfd)
{
	pid_t pid = spawn_clone3(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID |
	                             CLONE_NEWIPC | CLONE_NEWUTS,
	                         p->cgroup_fd, pidfd);
	if (pid == 0)
		exec_egress(p);
	return pid;
}

/* Our child (killed when we die), or detached: a grandchild in a session
 * of its own whose pid the middle child reports (it waits for the go, so
 * the pidfd we then open is on it).  Sets n's pid and pidfd. */
int egress_spawn(struct egress_plan *p, bool detached, struct sandbox_net *n)
{
	if (!detached) {
		p->die_with_parent = true;
		int pidfd = -1;
		pid_t pid = clone_egress(p, &pidfd);
		if (pid < 0)
			return -errno;
		n->egress_pid = pid;
		n->egress_pidfd = pidfd;
		n->egress_child = true;
		return 0;
	}
	int up[2];
	if (pipe2(up, O_CLOEXEC) < 0)
		return -errno;
	pid_t mid = fork();
	if (mid == 0) {
		setsid();
		int pidfd = -1;
		pid_t pid = clone_egress(p, &pidfd);
		int v = pid < 0 ? -errno : pid;
		_exit(write(up[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	int r = mid < 0 ? -errno : 0, v = 0;
	close(up[1]);
	if (r == 0) {
		ssize_t got = read_full(up[0], &v, sizeof(v));
		waitpid(mid, NULL, 0);
		r = got != sizeof(v) ? -ECHILD : v < 0 ? v : 0;
	}
	close(up[0]);
	if (r == 0) {
		n->egress_pidfd = (int)syscall(SYS_pidfd_open, v, 0);
		if (n->egress_pidfd < 0)
			return -errno; /* it reads EOF on go and exits */
		n->egress_pid = v;
	}
	return r;
}

static int write_map(pid_t pid, const char *file, uid_t id)
{
	char val[32];
	snprintf(val, sizeof(val), "0 %u 1\n", (unsigned)id);
	return spawn_write_proc(pid, file, val);
}

int egress_map(pid_t pid, uid_t id)
{
	int r = write_map(pid, "uid_map", id);
	return r < 0 ? r : write_map(pid, "gid_map", id);
}

/* Waits up to ms for the egress to exit; true when it did. */
bool egress_wait(struct sandbox_net *n, int ms)
{
	if (!fd_wait_readable(n->egress_pidfd, ms))
		return false;
	if (n->egress_child)
		waitpid(n->egress_pid, NULL, 0);
	return true;
}

void egress_stop(struct sandbox_net *n)
{
	if (n->egress_pidfd < 0)
		return;
	(void)syscall(SYS_pidfd_send_signal, n->egress_pidfd, SIGTERM, NULL, 0);
	if (!egress_wait(n, NET_EGRESS_TERM_MS)) {
		(void)syscall(SYS_pidfd_send_signal, n->egress_pidfd, SIGKILL, NULL, 0);
		egress_wait(n, NET_EGRESS_KILL_MS);
	}
	close(n->egress_pidfd);
	n->egress_pidfd = -1;
}

/* ---- cove-egress's files ------------------------------------------------ */

static int listen_unix(const char *path)
{
	unlink(path);
	mode_t old = umask(0177);
	int fd = spawn_listen(path);
	umask(old);
	return fd;
}

static int listen_tcp(const struct net_publish *pub)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_port = htons(pub->host_port),
		                  .sin_addr.s_addr = htonl(pub->addr) };
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* The upstream resolvers: cfg's, else $COVE_DNS_UPSTREAM (comma or space
 * separated), else /etc/resolv.conf's. */
int net_upstreams(const struct cove_config *cfg, struct net_upstream *up, size_t *n, char *err,
                  size_t errlen)
{
	*n = 0;
	int r;
	for (size_t i = 0; cfg->net_dns && cfg->net_dns[i] && *n < NET_DNS_MAX; i++)
		if ((r = net_dns_parse(cfg->net_dns[i], &up[(*n)++], err, errlen)) < 0)
			return r;
	if (*n)
		return 0;
	const char *env = getenv("COVE_DNS_UPSTREAM");
	if (env && *env) {
		char buf[512], *save = NULL;
		snprintf(buf, sizeof(buf), "%s", env);
		for (char *t = strtok_r(buf, ", ", &save); t && *n < NET_DNS_MAX;
		     t = strtok_r(NULL, ", ", &save))
			if ((r = net_dns_parse(t, &up[(*n)++], err, errlen)) < 0)
				return errf(err, errlen, r, "COVE_DNS_UPSTREAM: %s", err);
		return 0;
	}
	char text[8192];
	int fd = open("/etc/resolv.conf", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? read_full(fd, text, sizeof(text) - 1) : -1;
	if (fd >= 0)
		close(fd);
	text[got > 0 ? got : 0] = 0;
	*n = net_resolv_conf(text, up, NET_DNS_MAX);
	return 0;
}

/* The host's IPv4 addresses (what the sandbox may never reach), and the
 * sandbox's host end. */
static json_t *host_addrs(unsigned int k)
{
	json_t *a = json_array();
	struct ifaddrs *ifa = NULL;
	if (a && getifaddrs(&ifa) == 0) {
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
				continue;
			char s[16];
			net_ntoa(ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr), s);
			json_array_append_new(a, json_string(s));
		}
		freeifaddrs(ifa);
	}
	char s[16];
	net_ntoa(net_host_end(k), s);
	if (a)
		json_array_append_new(a, json_string(s));
	return a;
}

json_t *egress_config(unsigned int k, json_t *policy, const struct net_upstream *up, size_t nup,
                      const struct net_publish *pub, size_t npub)
{
	json_t *ups = json_array(), *pubs = json_array();
	for (size_t i = 0; ups && i < nup; i++) {
		char a[16], s[32];
		net_ntoa(up[i].addr, a);
		snprintf(s, sizeof(s), "%s:%u", a, up[i].port);
		json_array_append_new(ups, json_string(s));
	}
	for (size_t i = 0; pubs && i < npub; i++)
		json_array_append_new(pubs, json_pack("{s:i, s:i}", "fd", FD_PUBLISH + (int)i,
		                                      "guest_port", pub[i].guest_port));
	char upa[16];
	net_ntoa(net_ns_end(k), upa);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:O, s:i, s:i, s:o, s:i}",
	                 "guest", NET_GUEST_ADDR, "guest_mac", NET_GUEST_MAC, "gateway",
	                 NET_GW_ADDR, "tap", NET_TAP_NAME, "uplink", NET_UPLINK, "uplink_addr", upa,
	                 "host_addrs", host_addrs(k), "upstream", ups, "policy", policy, "ctl_fd",
	                 FD_CTL, "log_fd", FD_LOG, "publish", pubs, "ready_fd", FD_READY);
}

/* Waits for cove-egress's "ok" line on rfd, or its error line, or its
 * death, within NET_EGRESS_READY_MS. */
int egress_ready(struct sandbox_net *n, int rfd, const char *errlog, char *err, size_t errlen)
{
	char line[512];
	size_t len = 0;
	int64_t deadline = mono_ms() + NET_EGRESS_READY_MS;
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return errf(err, errlen, -ETIMEDOUT,
			            "cove-egress did not say it was ready within %d ms",
			            NET_EGRESS_READY_MS);
		struct pollfd p[2] = { { .fd = rfd, .events = POLLIN },
			               { .fd = n->egress_pidfd, .events = POLLIN } };
		int k = poll(p, 2, (int)left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errf(err, errlen, -errno, "poll: %s", strerror(errno));
		ssize_t got = 0;
		if (p[0].revents) {
			got = read(rfd, line + len, sizeof(line) - 1 - len);
			if (got < 0 && errno == EINTR)
				continue;
		}
		if (got > 0) {
			len += (size_t)got;
			line[len] = 0;
			char *nl = strchr(line, '\n');
			if (!nl && len < sizeof(line) - 1)
				continue;
			if (nl)
				*nl = 0;
			if (!strcmp(line, "ok"))
				return 0;
			text_clean(line);
			return errf(err, errlen, -EIO, "cove-egress: %s", line);
		}
		if (got == 0 && !p[0].revents && !p[1].revents)
			continue;
		/* EOF or death without a line: its own output says why. */
		char why[400];
		last_line(errlog, why, sizeof(why));
		text_clean(why);
		return errf(err, errlen, -ECHILD, "cove-egress exited before it was ready: %s",
		            why[0] ? why : "(no output)");
	}
}

void egress_plan_close(struct egress_plan *p)
{
	for (int i = 0; i < p->nfds; i++)
		if (p->fds[i] >= 0)
			close(p->fds[i]);
	p->nfds = 0;
	if (p->exe >= 0)
		close(p->exe);
	if (p->out >= 0)
		close(p->out);
	p->exe = p->out = -1;
}

/* The files of step 2 (the publish listeners first: a port in use is the
 * user's most likely error). */
int egress_files(const char *dir, const struct cove_config *cfg, struct egress_plan *p,
                 struct net_publish *pub, size_t *npub, int *ready_r, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int r, ready[2];
	*npub = 0;
	for (size_t i = 0; cfg->net_publish && cfg->net_publish[i]; i++) {
		if ((r = net_publish_parse(cfg->net_publish[i], &pub[i], err, errlen)) < 0)
			return r;
		int fd = listen_tcp(&pub[i]);
		if (fd < 0) {
			char a[16];
			net_ntoa(pub[i].addr, a);
			return errf(err, errlen, fd, "--publish %s: cannot listen on %s:%u: %s",
			            cfg->net_publish[i], a, pub[i].host_port, strerror(-fd));
		}
		p->fds[FD_PUBLISH - FD_CONFIG + i] = fd;
		(*npub)++;
	}
	p->nfds = FD_PUBLISH - FD_CONFIG + (int)*npub;
	p->fds[0] = memfd_create("cove-egress-config", MFD_CLOEXEC);
	snprintf(path, sizeof(path), "%s/%s", dir, EGRESS_SOCK);
	p->fds[1] = listen_unix(path);
	snprintf(path, sizeof(path), "%s/%s", dir, EGRESS_LOG);
	p->fds[2] = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (pipe2(ready, O_CLOEXEC) < 0)
		ready[0] = ready[1] = -1;
	p->fds[3] = ready[1];
	*ready_r = ready[0];
	snprintf(path, sizeof(path), "%s/%s", dir, EGRESS_ERR);
	p->out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	const char *exe = cfg->egress;
	p->exe = exe ? open(exe, O_PATH | O_CLOEXEC) : -1;
	if (p->exe < 0)
		return errf(err, errlen, exe ? -errno : -EINVAL, "cove-egress '%s': %s (run make)",
		            exe ? exe : "(none configured)", exe ? strerror(errno) : "not found");
	for (int i = 0; i < 4; i++)
		if (p->fds[i] < 0)
			return errf(err, errlen, -EIO, "cannot make cove-egress's %s in %s",
			            (const char *[]){ "config", "control socket " EGRESS_SOCK,
			                              "log " EGRESS_LOG, "ready pipe" }[i],
			            dir);
	if (p->out < 0)
		return errf(err, errlen, -errno, "cannot open %s/%s: %s", dir, EGRESS_ERR,
		            strerror(errno));
	return 0;
}
