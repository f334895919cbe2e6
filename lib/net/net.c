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
 *      a thread that entered that namespace, its ip_forward off (a new
 *      namespace copies the host's, on once a sandbox ran), tap0 (kept
 *      open for cove-vmm), addresses, lo, the default route; the host
 *      end's address;
 *   6. the config and go: cove-egress applies its table while the caller
 *      spawns cove-vmm (the guest boots meanwhile; forwarding in the
 *      sandbox's namespace is still off, so nothing it sends leaves).
 * Then net_finish:
 *   7. the host's table inet cove and ip_forward;
 *   8. "ok" on the ready pipe within NET_EGRESS_READY_MS (or its error
 *      line): cove-egress's rules are in place;
 *   9. forwarding on in the sandbox's namespace. */
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
#include "errf.h"
#include "io.h"
#include "lib/base/cove_types.h"
#include "lib/base/jail.h"
#include "lib/base/registry.h"
#include "lib/base/sandbox_net.h"
#include "lib/net/egress_ctl.h"
#include "lib/net/net.h"
#include "lib/net/net_addr.h"
#include "lib/net/net_egress.h"
#include "lib/net/net_link.h"
#include "lib/net/net_nft.h"

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

int net_claim_index(struct sandbox_net *n, const char *sbdir, const char *name, char *err,
                    size_t errlen)
{
	char dir[REGISTRY_DIR_MAX + 8];
	unsigned int first, last;
	int r = net_index_range(&first, &last, err, errlen);
	if (r < 0)
		return r;
	if (net_dir(sbdir, dir, sizeof(dir)) < 0)
		return errf(err, errlen, -ENAMETOOLONG, "bad sandbox directory %s", sbdir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return errf(err, errlen, -errno, "cannot create %s: %s", dir, strerror(errno));
	uint32_t h = 2166136261u;
	for (const char *s = name; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	const unsigned int count = last - first + 1;
	for (unsigned int i = 0; i < count; i++) {
		unsigned int k = first + (h + i) % count;
		char p[sizeof(dir) + 8], ifname[IFNAMSIZ];
		snprintf(p, sizeof(p), "%s/%u", dir, k);
		host_link(k, ifname);
		for (int again = 0; again < 2; again++) {
			int fd =
			    open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd >= 0) {
				r = write_all(fd, name, strlen(name));
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
	return errf(err, errlen, -EUSERS, "no free network index (%u-%u) in %s", first, last, dir);
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

/* The calling thread's namespace's net.ipv4.ip_forward (a net sysctl opened
 * there is that namespace's).  0 or -errno. */
static int ns_sysctl_forward(bool on)
{
	int fd = open("/proc/sys/net/ipv4/ip_forward", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, on ? "1\n" : "0\n", 2);
	close(fd);
	return r < 0 ? r : 0;
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
	/* A new namespace copies the host's IPv4 forwarding (on once any
	 * sandbox ran): off until cove-egress's table is in (net_finish). */
	j->step = "turning forwarding off in it";
	if ((j->r = ns_sysctl_forward(false)) < 0)
		return NULL;
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

/* Runs in the sandbox's network namespace: the direct path forwards
 * tap0 -> up0 from now on (cove-egress's table decides what may).  A net
 * sysctl opened here is this namespace's.
 * #syscalls: setns */
static void *ns_forwarding(void *arg)
{
	struct ns_job *j = arg;
	j->step = "entering its network namespace";
	if (setns(j->nsfd, CLONE_NEWNET) < 0) {
		j->r = -errno;
		return NULL;
	}
	j->step = "turning forwarding on in it";
	j->r = ns_sysctl_forward(true);
	return NULL;
}

static int in_namespace(struct ns_job *j, void *(*fn)(void *))
{
	pthread_t t;
	int e = pthread_create(&t, NULL, fn, j);
	if (e) {
		j->step = "starting a thread";
		return -e;
	}
	pthread_join(t, NULL);
	return j->r;
}

/* The steps of the file's head comment, in order. */
int net_setup(struct sandbox_net *n, const char *dir, const char *name, int cgroup_fd,
              const struct cove_config *cfg, json_t *policy, const char *limits, char *err,
              size_t errlen)
{
	struct egress_plan p = { .exe = -1, .out = -1, .go = -1, .cgroup_fd = cgroup_fd };
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
	if ((r = net_upstreams(cfg, up, &nup, err, errlen)) < 0 ||
	    (r = net_claim_index(n, dir, name, err, errlen)) < 0 ||
	    (r = jail_claim_uid(dir, name, &n->uid, n->uid_claim, sizeof(n->uid_claim), err,
	                        errlen)) < 0 ||
	    (r = egress_files(dir, cfg, &p, pub, &npub, &ready_r, err, errlen)) < 0)
		goto fail;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0) {
		r = errf(err, errlen, -errno, "socketpair: %s", strerror(errno));
		goto fail;
	}
	p.go = go[1];
	if ((r = egress_spawn(&p, cfg->detached, n)) < 0) {
		r = errf(err, errlen, r, "cannot start cove-egress in its namespaces: %s",
		         strerror(-r));
		goto fail;
	}
	close(go[1]);
	go[1] = -1;
	if (registry_proc_start(n->egress_pid, &n->egress_start) < 0)
		n->egress_start = 0;
	if ((r = egress_map(n->egress_pid, n->uid)) < 0) {
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
	r = in_namespace(&job, ns_setup);
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
	egress_plan_close(&p); /* ours closed: EOF on ready when it dies */
	mnl_socket_close(nl);
	snprintf(n->errlog, sizeof(n->errlog), "%s/%s", dir, EGRESS_ERR);
	memcpy(n->up, up, nup * sizeof(up[0]));
	n->nup = nup;
	n->ready_fd = ready_r;
	n->nsfd = nsfd;
	n->go_fd = go[0];
	n->pending = true;
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
	egress_plan_close(&p);
	net_teardown(n, name, true);
	return r;
}

static void pending_close(struct sandbox_net *n)
{
	if (!n->pending)
		return;
	close(n->ready_fd);
	close(n->nsfd);
	close(n->go_fd);
	n->pending = false;
}

int net_finish(struct sandbox_net *n, char *err, size_t errlen)
{
	if (n->on && n->policy_pending) {
		/* A pool's slot: its new policy's answer. */
		json_t *reply = NULL;
		char sock[PATH_MAX];
		snprintf(sock, sizeof(sock), "%.*s" EGRESS_SOCK,
		         (int)(strlen(n->errlog) - strlen(EGRESS_ERR)), n->errlog);
		n->policy_pending = false;
		int r = net_ctl_reply(n->policy_fd, sock, &reply, err, errlen);
		json_decref(reply);
		if (r < 0)
			return r;
	}
	if (!n->on || !n->pending)
		return 0;
	char record[PATH_MAX];
	snprintf(record, sizeof(record), "%s", n->claim);
	char *slash = strrchr(record, '/');
	if (slash)
		snprintf(slash, sizeof(record) - (size_t)(slash - record),
		         ".host"); /* <base>/.net.host */
	int r = net_host_rules(record, n->up, n->nup, err, errlen);
	if (r == 0)
		r = egress_ready(n, n->ready_fd, n->errlog, err, errlen);
	if (r == 0) {
		struct ns_job job = { .nsfd = n->nsfd, .k = n->index };
		if ((r = in_namespace(&job, ns_forwarding)) < 0)
			r = errf(err, errlen, r, "sandbox network namespace: %s: %s", job.step,
			         strerror(-r));
	}
	pending_close(n);
	return r;
}

void net_teardown(struct sandbox_net *n, const char *name, bool release)
{
	if (!n->on)
		return;
	pending_close(n);
	if (n->policy_pending)
		close(n->policy_fd);
	n->policy_pending = false;
	if (n->tap_fd >= 0)
		close(n->tap_fd);
	n->tap_fd = -1;
	/* The namespace (tap0, up0, the veth) goes with its last holder:
	 * cove-egress, once cove-vmm's TAP is closed. */
	egress_stop(n);
	char ifname[IFNAMSIZ];
	host_link(n->index, ifname);
	if (!release)
		n->claim[0] = 0; /* K may be another sandbox's now: no link or claim */
	struct mnl_socket *nl = n->claim[0] ? nl_open() : NULL;
	if (nl) {
		(void)nl_link_del(nl, ifname); /* the namespace's end goes with it */
		mnl_socket_close(nl);
	}
	if (n->claim[0] && claim_names(n->claim, name))
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
