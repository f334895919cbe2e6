/* A sandbox's network, set up and torn down (net.h).  The order of
 * net_setup, each step undone by net_teardown when a later one fails:
 *   1. claim the index K (<base>/.net/<K>, O_EXCL) and a jail uid for
 *      cove-egress (a second claim beside cove-vmm's);
 *   2. the files cove-egress gets: its config (a memfd), the control
 *      socket <entry>/egress.sock, the decision log <entry>/egress.log,
 *      the ready pipe, the publish listeners (bound here, in the host's
 *      namespace);
 *   3. clone3 cove-egress into new user, net, mount, PID, IPC and UTS
 *      namespaces and the sandbox's cgroup; it waits on the go socket;
 *   4. its uid/gid maps (0 inside = its jail uid outside);
 *   5. the veth cv<K> / up0 (up0 created inside its namespace), then, on
 *      a thread that entered that namespace, tap0 (kept open for
 *      cove-vmm), addresses, lo, the default route; the host end's address;
 *   6. the host's table inet cove and ip_forward;
 *   7. the config, go, and "ok" on the ready pipe within
 *      NET_EGRESS_READY_MS (or its error line). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <libmnl/libmnl.h>
#include <linux/close_range.h>
#include <linux/if_tun.h>
#include <linux/sched.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "io.h"
#include "libcove.h"
#include "net.h"
#include "text.h"

#define EGRESS_SOCK "egress.sock"
#define EGRESS_LOG  "egress.log"
#define EGRESS_ERR  "egress.err" /* cove-egress's own stdout and stderr */
#define CTL_MS      5000

/* The fds cove-egress finds (config, ctl, log, ready, then publish). */
enum { FD_CONFIG = 3, FD_CTL, FD_LOG, FD_READY, FD_PUBLISH };

static void host_link(unsigned int k, char *out)
{
	snprintf(out, IFNAMSIZ, NET_HOST_LINK "%u", k);
}

/* <base>/.net of the entry dir. */
static int net_dir(const char *sbdir, char *out, size_t len)
{
	const char *slash = strrchr(sbdir, '/');
	if (!slash || snprintf(out, len, "%.*s/.net", (int)(slash - sbdir), sbdir) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* Whether the claim file p names the sandbox name. */
static bool claim_names(const char *p, const char *name)
{
	char owner[REGISTRY_NAME_MAX + 2] = "";
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, owner, sizeof(owner) - 1);
	close(fd);
	owner[n > 0 ? n : 0] = 0;
	return !strcmp(owner, name);
}

/* Claims K in <base>/.net/<K>.  A claim whose sandbox directory is gone,
 * and whose link no longer exists, is stale and taken over. */
static int claim_index(struct sandbox_net *n, const char *sbdir, const char *name, char *err,
                       size_t errlen)
{
	char dir[REGISTRY_DIR_MAX + 8];
	if (net_dir(sbdir, dir, sizeof(dir)) < 0)
		return errf(err, errlen, -ENAMETOOLONG, "bad sandbox directory %s", sbdir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return errf(err, errlen, -errno, "cannot create %s: %s", dir, strerror(errno));
	uint32_t h = 2166136261u;
	for (const char *s = name; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	for (unsigned int i = 0; i <= NET_INDEX_MAX; i++) {
		unsigned int k = (h + i) % (NET_INDEX_MAX + 1);
		char p[sizeof(dir) + 8], ifname[IFNAMSIZ];
		snprintf(p, sizeof(p), "%s/%u", dir, k);
		host_link(k, ifname);
		for (int again = 0; again < 2; again++) {
			int fd =
			    open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd >= 0) {
				int r = write_all(fd, name, strlen(name));
				close(fd);
				if (r < 0) {
					unlink(p);
					return errf(err, errlen, r, "cannot write %s: %s", p,
					            strerror(-r));
				}
				if (if_nametoindex(ifname)) {
					/* A link of a sandbox that lost its claim: not ours. */
					unlink(p);
					break;
				}
				n->index = k;
				snprintf(n->claim, sizeof(n->claim), "%s", p);
				return 0;
			}
			if (errno != EEXIST)
				return errf(err, errlen, -errno, "cannot create %s: %s", p,
				            strerror(errno));
			char owner[REGISTRY_NAME_MAX + 2] = "", odir[sizeof(dir) + 40];
			fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0) {
				ssize_t got = read(fd, owner, sizeof(owner) - 1);
				close(fd);
				owner[got > 0 ? got : 0] = 0;
			}
			snprintf(odir, sizeof(odir), "%.*s/%s", (int)(strlen(dir) - 5), dir, owner);
			struct stat st;
			if ((owner[0] && registry_name_valid(owner) && stat(odir, &st) == 0) ||
			    if_nametoindex(ifname))
				break; /* in use */
			unlink(p);
		}
	}
	return errf(err, errlen, -EUSERS, "no free network index (0-%d) in %s", NET_INDEX_MAX, dir);
}

/* ---- the sandbox's namespace, entered on a thread ----------------------- */

struct ns_job {
	int nsfd;
	unsigned int k;
	int tap_fd; /* out */
	int r;
	const char *step; /* what failed */
};

static int open_tap(void)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", NET_TAP_NAME);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* Runs in the sandbox's network namespace (this thread only).
 * #syscalls: setns */
static void *ns_setup(void *arg)
{
	struct ns_job *j = arg;
	static const unsigned char mac[6] = { 0x06, 0x00, 0xac, 0x10, 0x00, 0x01 };
	j->tap_fd = -1;
	j->step = "entering its network namespace";
	if (setns(j->nsfd, CLONE_NEWNET) < 0) {
		j->r = -errno;
		return NULL;
	}
	j->step = "creating " NET_TAP_NAME;
	int fd = open_tap();
	if (fd < 0) {
		j->r = fd;
		return NULL;
	}
	j->tap_fd = fd;
	j->step = "opening rtnetlink";
	struct mnl_socket *nl = nl_open();
	if (!nl) {
		j->r = -errno;
		return NULL;
	}
	uint32_t gw = ntohl(inet_addr(NET_GW_ADDR));
	int r;
	if ((j->step = "setting " NET_TAP_NAME " up", r = nl_link_up(nl, NET_TAP_NAME, mac)) < 0 ||
	    (j->step = "addressing " NET_TAP_NAME, r = nl_addr_add(nl, NET_TAP_NAME, gw, 30)) < 0 ||
	    (j->step = "setting lo up", r = nl_link_up(nl, "lo", NULL)) < 0 ||
	    (j->step = "addressing " NET_UPLINK,
	     r = nl_addr_add(nl, NET_UPLINK, net_ns_end(j->k), 30)) < 0 ||
	    (j->step = "setting " NET_UPLINK " up", r = nl_link_up(nl, NET_UPLINK, NULL)) < 0 ||
	    (j->step = "adding the default route", r = nl_route_default(nl, net_host_end(j->k))) <
	        0)
		j->r = r;
	mnl_socket_close(nl);
	return NULL;
}

static int in_namespace(struct ns_job *j)
{
	pthread_t t;
	int e = pthread_create(&t, NULL, ns_setup, j);
	if (e) {
		j->step = "starting a thread";
		return -e;
	}
	pthread_join(t, NULL);
	return j->r;
}

/* ---- cove-egress as a process ------------------------------------------- */

struct egress_plan {
	int exe;                      /* O_PATH of the binary */
	int fds[4 + NET_PUBLISH_MAX]; /* become FD_CONFIG, FD_CTL, ... */
	int nfds;
	int out; /* its stdout and stderr */
	int go;  /* it waits for a byte here */
	bool die_with_parent;
	int cgroup_fd;
};

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
	if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
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
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &dfl, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	static char *const argv[] = { "cove-egress", "--config-fd", "3", NULL };
	static char *const envp[] = { NULL };
	syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
	_exit(127);
}

static pid_t clone_egress(const struct egress_plan *p, int *pidfd)
{
	struct clone_args a;
	memset(&a, 0, sizeof(a));
	a.flags = CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC |
	          CLONE_NEWUTS | CLONE_PIDFD;
	a.pidfd = (uint64_t)(uintptr_t)pidfd;
	a.exit_signal = SIGCHLD;
	if (p->cgroup_fd >= 0) {
		a.flags |= CLONE_INTO_CGROUP;
		a.cgroup = (uint64_t)p->cgroup_fd;
	}
	pid_t pid = (pid_t)syscall(SYS_clone3, &a, sizeof(a));
	if (pid == 0)
		exec_egress(p);
	return pid;
}

/* Our child (killed when we die), or detached: a grandchild in a session
 * of its own whose pid the middle child reports (it waits for the go, so
 * the pidfd we then open is on it).  Sets n's pid and pidfd. */
static int spawn_egress(struct egress_plan *p, bool detached, struct sandbox_net *n)
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
	char path[64], val[32];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	snprintf(val, sizeof(val), "0 %u 1\n", (unsigned)id);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, val, strlen(val));
	close(fd);
	return r;
}

/* Waits up to ms for the egress to exit; true when it did. */
static bool egress_wait(struct sandbox_net *n, int ms)
{
	struct pollfd p = { .fd = n->egress_pidfd, .events = POLLIN };
	int64_t deadline = mono_ms() + ms;
	for (;;) {
		int64_t left = deadline - mono_ms();
		int k = poll(&p, 1, left > 0 ? (int)left : 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		break;
	}
	if (n->egress_child)
		waitpid(n->egress_pid, NULL, 0);
	return true;
}

static void egress_stop(struct sandbox_net *n)
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
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	mode_t old = umask(0177);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0 ? -errno : 0;
	umask(old);
	if (r < 0) {
		close(fd);
		return r;
	}
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
static int upstreams(const struct cove_config *cfg, struct net_upstream *up, size_t *n, char *err,
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

static json_t *egress_config(unsigned int k, json_t *policy, const struct net_upstream *up,
                             size_t nup, const struct net_publish *pub, size_t npub)
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
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:O, s:i, s:i, s:o, s:i}", "guest",
	                 NET_GUEST_ADDR, "gateway", NET_GW_ADDR, "tap", NET_TAP_NAME, "uplink",
	                 NET_UPLINK, "host_addrs", host_addrs(k), "upstream", ups, "policy", policy,
	                 "ctl_fd", FD_CTL, "log_fd", FD_LOG, "publish", pubs, "ready_fd", FD_READY);
}

/* Waits for cove-egress's "ok" line on rfd, or its error line, or its
 * death, within NET_EGRESS_READY_MS. */
static int egress_ready(struct sandbox_net *n, int rfd, const char *errlog, char *err,
                        size_t errlen)
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
		vmm_log_tail(errlog, why, sizeof(why));
		text_clean(why);
		return errf(err, errlen, -ECHILD, "cove-egress exited before it was ready: %s",
		            why[0] ? why : "(no output)");
	}
}

static void close_plan(struct egress_plan *p)
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
static int egress_files(struct cove_sandbox *sb, const struct cove_config *cfg,
                        struct egress_plan *p, struct net_publish *pub, size_t *npub, int *ready_r,
                        char *err, size_t errlen)
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
	snprintf(path, sizeof(path), "%s/%s", sb->dir, EGRESS_SOCK);
	p->fds[1] = listen_unix(path);
	snprintf(path, sizeof(path), "%s/%s", sb->dir, EGRESS_LOG);
	p->fds[2] = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (pipe2(ready, O_CLOEXEC) < 0)
		ready[0] = ready[1] = -1;
	p->fds[3] = ready[1];
	*ready_r = ready[0];
	snprintf(path, sizeof(path), "%s/%s", sb->dir, EGRESS_ERR);
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
			            sb->dir);
	if (p->out < 0)
		return errf(err, errlen, -errno, "cannot open %s/%s: %s", sb->dir, EGRESS_ERR,
		            strerror(errno));
	return 0;
}

int net_setup(struct cove_sandbox *sb, const struct cove_config *cfg, json_t *policy,
              const char *limits, char *err, size_t errlen)
{
	struct sandbox_net *n = &sb->net;
	struct egress_plan p = { .exe = -1, .out = -1, .go = -1, .cgroup_fd = sb->jail.cgroup_fd };
	for (size_t i = 0; i < sizeof(p.fds) / sizeof(p.fds[0]); i++)
		p.fds[i] = -1;
	struct net_publish pub[NET_PUBLISH_MAX];
	struct net_upstream up[NET_DNS_MAX];
	size_t npub = 0, nup = 0;
	int ready_r = -1, go[2] = { -1, -1 }, nsfd = -1, r;
	struct mnl_socket *nl = NULL;
	char ifname[IFNAMSIZ], path[64];
	n->on = true;
	n->tap_fd = n->egress_pidfd = -1;
	snprintf(n->limits, sizeof(n->limits), "%s", limits ? limits : "");
	if ((r = upstreams(cfg, up, &nup, err, errlen)) < 0 ||
	    (r = claim_index(n, sb->dir, sb->name, err, errlen)) < 0 ||
	    (r = jail_claim_uid(sb->dir, sb->name, &n->uid, n->uid_claim, sizeof(n->uid_claim), err,
	                        errlen)) < 0 ||
	    (r = egress_files(sb, cfg, &p, pub, &npub, &ready_r, err, errlen)) < 0)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0) {
		r = errf(err, errlen, -errno, "socketpair: %s", strerror(errno));
		goto fail;
	}
	p.go = go[1];
	if ((r = spawn_egress(&p, cfg->detached, n)) < 0) {
		r = errf(err, errlen, r, "cannot start cove-egress in its namespaces: %s",
		         strerror(-r));
		goto fail;
	}
	close(go[1]);
	go[1] = -1;
	if ((r = write_map(n->egress_pid, "uid_map", n->uid)) < 0 ||
	    (r = write_map(n->egress_pid, "gid_map", n->uid)) < 0) {
		r = errf(err, errlen, r, "cannot map cove-egress's uid %u: %s", (unsigned)n->uid,
		         strerror(-r));
		goto fail;
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)n->egress_pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	host_link(n->index, ifname);
	nl = nsfd >= 0 ? nl_open() : NULL;
	if (!nl) {
		r = errf(err, errlen, -errno, "cannot reach the sandbox's network namespace: %s",
		         strerror(errno));
		goto fail;
	}
	if ((r = nl_veth_add(nl, ifname, NET_UPLINK, nsfd)) < 0) {
		r = errf(err, errlen, r, "cannot create the veth pair %s/%s: %s", ifname,
		         NET_UPLINK, strerror(-r));
		goto fail;
	}
	struct ns_job job = { .nsfd = nsfd, .k = n->index };
	r = in_namespace(&job);
	n->tap_fd = job.tap_fd;
	if (r < 0) {
		r = errf(err, errlen, r, "sandbox network namespace: %s: %s", job.step,
		         strerror(-r));
		goto fail;
	}
	if ((r = nl_addr_add(nl, ifname, net_host_end(n->index), 30)) < 0 ||
	    (r = nl_link_up(nl, ifname, NULL)) < 0) {
		r = errf(err, errlen, r, "cannot set %s up: %s", ifname, strerror(-r));
		goto fail;
	}
	if ((r = net_host_rules(up, nup, err, errlen)) < 0)
		goto fail;
	json_t *conf = egress_config(n->index, policy, up, nup, pub, npub);
	char *text = conf ? json_dumps(conf, JSON_COMPACT) : NULL;
	json_decref(conf);
	r = text ? pwrite_all(p.fds[0], text, strlen(text), 0) : -ENOMEM;
	free(text);
	if (r < 0) {
		r = errf(err, errlen, r, "cannot write cove-egress's config: %s", strerror(-r));
		goto fail;
	}
	if (send(go[0], "g", 1, MSG_NOSIGNAL) != 1) {
		r = errf(err, errlen, -ECHILD, "cove-egress died before it started");
		goto fail;
	}
	close_plan(&p); /* ours closed: EOF on ready when it dies */
	char errlog[PATH_MAX];
	snprintf(errlog, sizeof(errlog), "%s/%s", sb->dir, EGRESS_ERR);
	if ((r = egress_ready(n, ready_r, errlog, err, errlen)) < 0)
		goto fail;
	if (registry_proc_start(n->egress_pid, &n->egress_start) < 0)
		n->egress_start = 0;
	mnl_socket_close(nl);
	close(nsfd);
	close(ready_r);
	close(go[0]);
	return 0;
fail:
	if (nl)
		mnl_socket_close(nl);
	if (nsfd >= 0)
		close(nsfd);
	if (ready_r >= 0)
		close(ready_r);
	for (int i = 0; i < 2; i++)
		if (go[i] >= 0)
			close(go[i]);
	close_plan(&p);
	net_teardown(sb);
	return r;
}

void net_teardown(struct cove_sandbox *sb)
{
	struct sandbox_net *n = &sb->net;
	if (!n->on)
		return;
	if (n->tap_fd >= 0)
		close(n->tap_fd);
	n->tap_fd = -1;
	/* The namespace (tap0, up0, the veth) goes with its last holder:
	 * cove-egress, once cove-vmm's TAP is closed. */
	egress_stop(n);
	char ifname[IFNAMSIZ];
	host_link(n->index, ifname);
	struct mnl_socket *nl = n->claim[0] ? nl_open() : NULL;
	if (nl) {
		(void)nl_link_del(nl, ifname); /* the namespace's end goes with it */
		mnl_socket_close(nl);
	}
	if (n->claim[0] && claim_names(n->claim, sb->name))
		unlink(n->claim);
	if (n->uid_claim[0])
		unlink(n->uid_claim);
	n->claim[0] = n->uid_claim[0] = 0;
	n->on = false;
}

void net_clean_dead(const char *base, const struct registry_meta *m)
{
	if (!m->net.on)
		return;
	struct sandbox_net n = { .egress_pidfd = -1, .tap_fd = -1 };
	if (m->net.egress_pid > 0 &&
	    registry_proc_is_egress(m->net.egress_pid, m->net.egress_start) == 0) {
		n.egress_pidfd = (int)syscall(SYS_pidfd_open, m->net.egress_pid, 0);
		n.egress_pid = m->net.egress_pid;
		/* Checked again through the pidfd: it cannot change under us now. */
		if (n.egress_pidfd >= 0 &&
		    registry_proc_is_egress(m->net.egress_pid, m->net.egress_start) == 0) {
			(void)syscall(SYS_pidfd_send_signal, n.egress_pidfd, SIGKILL, NULL, 0);
			egress_wait(&n, NET_EGRESS_KILL_MS);
		}
		if (n.egress_pidfd >= 0)
			close(n.egress_pidfd);
	}
	char claim[PATH_MAX], ifname[IFNAMSIZ];
	snprintf(claim, sizeof(claim), "%s/.net/%u", base, m->net.index);
	if (!claim_names(claim, m->name))
		return; /* K is another sandbox's now */
	host_link(m->net.index, ifname);
	struct mnl_socket *nl = nl_open();
	if (nl) {
		(void)nl_link_del(nl, ifname);
		mnl_socket_close(nl);
	}
	unlink(claim);
}

/* ---- cove_net_set ------------------------------------------------------- */

/* One request line to the control socket, one answer line back, within
 * CTL_MS. */
static int ctl_call(const char *sock, json_t *req, json_t **reply, char *err, size_t errlen)
{
	char *text = json_dumps(req, JSON_COMPACT);
	if (!text)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	int r = fd < 0 ? -errno : 0;
	if (!r && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)
		r = -errno;
	int64_t deadline = mono_ms() + CTL_MS;
	size_t len = strlen(text), off = 0;
	text[len++] = '\n'; /* json_dumps' terminator becomes the newline */
	while (!r && off < len) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int64_t left = deadline - mono_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		ssize_t w = send(fd, text + off, len - off, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			r = -errno;
		else if (w > 0)
			off += (size_t)w;
	}
	free(text);
	char line[4096];
	size_t got = 0;
	while (!r) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - mono_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		ssize_t k = read(fd, line + got, sizeof(line) - 1 - got);
		if (k < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : -ECONNRESET;
			break;
		}
		got += (size_t)k;
		line[got] = 0;
		if (strchr(line, '\n') || got == sizeof(line) - 1)
			break;
	}
	if (fd >= 0)
		close(fd);
	if (r < 0)
		return errf(err, errlen, r, "cove-egress's control socket %s: %s", sock,
		            strerror(-r));
	json_error_t je;
	*reply = json_loads(line, JSON_DISABLE_EOF_CHECK, &je);
	if (!json_is_object(*reply)) {
		json_decref(*reply);
		*reply = NULL;
		return errf(err, errlen, -EPROTO,
		            "cove-egress answered something that is not JSON");
	}
	json_t *ok = json_object_get(*reply, "ok");
	if (!json_is_true(ok)) {
		const char *e = json_string_value(json_object_get(*reply, "error"));
		char msg[400];
		snprintf(msg, sizeof(msg), "%s", e ? e : "refused");
		text_clean(msg);
		json_decref(*reply);
		*reply = NULL;
		return errf(err, errlen, -EIO, "cove-egress: %s", msg);
	}
	return 0;
}

int cove_net_set(struct cove_sandbox *sb, const struct cove_net_policy *policy, char *err,
                 size_t errlen)
{
	if (!sb || sb->stopped)
		return errf(err, errlen, -ESRCH, "the sandbox is stopped");
	struct cove_config c = { .net = *policy };
	if (policy->mode == COVE_NET_OFF)
		return errf(err, errlen, -EINVAL,
		            "a running sandbox keeps its NIC: the policy's mode is none, rules or "
		            "open");
	int r = net_check_config(&c, true, err, errlen);
	if (r < 0)
		return r;
	struct registry_meta *m = malloc(sizeof(*m));
	if (!m)
		return errf(err, errlen, -ENOMEM, "out of memory");
	if ((r = registry_meta_read(sb->dir, m)) < 0) {
		r = errf(err, errlen, r, "sandbox %s: unreadable %s/%s", sb->name, sb->dir,
		         REGISTRY_META);
		goto out;
	}
	if (!m->net.on) {
		r = errf(err, errlen, -ENOTSUP,
		         "sandbox %s was started without networking (start it with --net, "
		         "--allow or --publish)",
		         sb->name);
		goto out;
	}
	json_t *pj = net_policy_json(policy);
	json_t *req = pj ? json_pack("{s:s, s:O}", "op", "policy", "policy", pj) : NULL;
	char sock[REGISTRY_DIR_MAX + sizeof(EGRESS_SOCK) + 1];
	snprintf(sock, sizeof(sock), "%s/%s", sb->dir, EGRESS_SOCK);
	json_t *reply = NULL;
	r = req ? ctl_call(sock, req, &reply, err, errlen)
	        : errf(err, errlen, -ENOMEM, "no memory");
	json_decref(req);
	json_decref(reply);
	char *text = r == 0 ? json_dumps(pj, JSON_COMPACT) : NULL;
	json_decref(pj);
	if (r == 0 && text && strlen(text) < sizeof(m->net.policy)) {
		memcpy(m->net.policy, text, strlen(text) + 1);
		if (registry_meta_write(sb->dir, m) < 0)
			r = errf(err, errlen, -EIO,
			         "the policy is in force, but %s/%s could not record it", sb->dir,
			         REGISTRY_META);
	}
	free(text);
out:
	free(m);
	return r;
}

/* ---- cove doctor -------------------------------------------------------- */

int cove_net_probe(char *out, size_t len)
{
	char why[256] = "";
	int tun = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	int tun_errno = errno;
	if (tun >= 0)
		close(tun);
	char nft[200] = "";
	bool root = geteuid() == 0;
	bool nft_ok = root && net_nft_probe(nft, sizeof(nft)) == 0;
	bool userns = jail_userns_probe() == 0;
	char fwd[4] = "?";
	int fd = open("/proc/sys/net/ipv4/ip_forward", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t k = read(fd, fwd, 1);
		fwd[k > 0 ? 1 : 0] = 0;
		close(fd);
	}
	if (!root)
		snprintf(why, sizeof(why),
		         "not root (uid %u): the veth, NAT and nftables rules "
		         "live in the host's namespace",
		         (unsigned)geteuid());
	else if (tun < 0)
		snprintf(why, sizeof(why), "/dev/net/tun: %s", strerror(tun_errno));
	else if (!nft_ok)
		snprintf(why, sizeof(why), "%s", nft);
	snprintf(out, len,
	         "%s: root %s, /dev/net/tun %s, nf_tables %s, user namespaces %s, ip_forward %s "
	         "(libcove turns it on)%s%s",
	         why[0] ? "unavailable" : "available", root ? "yes" : "no",
	         tun >= 0 ? "ok" : "missing",
	         !root    ? "unchecked"
	         : nft_ok ? "ok"
	                  : "unusable",
	         userns ? "ok" : "refused", fwd, why[0] ? "; " : "", why);
	return why[0] ? 1 : 0;
}
