#include "confine.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "errf.h"

/* Both halves' needs after setup, and why. */
static const int allowed[] = {
	/* epoll loop, timers (vDSO fallbacks) */
	SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait),
	SCMP_SYS(epoll_ctl),
	SCMP_SYS(clock_gettime),
	SCMP_SYS(gettimeofday),
	/* sockets: the pairs between the halves, ctl clients (keeper) or
	 * guest, upstream and forwarded ctl clients (parser) */
	SCMP_SYS(accept4),
	SCMP_SYS(recvfrom),
	SCMP_SYS(sendto),
	SCMP_SYS(recvmsg),
	SCMP_SYS(sendmsg),
	SCMP_SYS(close),
	SCMP_SYS(write),
	/* memory */
	SCMP_SYS(brk),
	SCMP_SYS(mmap),
	SCMP_SYS(munmap),
	SCMP_SYS(mremap),
	SCMP_SYS(madvise),
	/* stdio, libnftables: fstat of their buffers (fmemopen/open_memstream) */
	SCMP_SYS(newfstatat),
	SCMP_SYS(fstat),
	SCMP_SYS(lseek),
	SCMP_SYS(futex),
	SCMP_SYS(rt_sigreturn),
	SCMP_SYS(restart_syscall),
	SCMP_SYS(exit),
	SCMP_SYS(exit_group),
};

/* The parser's alone: dials (upstream DNS, proxy, publish) and its
 * listeners' options, signalfd (read, rt_sigprocmask), TLS (getrandom),
 * the wait for a pin's status (poll). */
static const int parser_allowed[] = {
	SCMP_SYS(connect),    SCMP_SYS(shutdown),    SCMP_SYS(setsockopt),
	SCMP_SYS(getsockopt), SCMP_SYS(getsockname), SCMP_SYS(bind),
	SCMP_SYS(fcntl),      SCMP_SYS(read),        SCMP_SYS(writev),
	SCMP_SYS(getrandom),  SCMP_SYS(getpid),      SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(poll),       SCMP_SYS(ppoll),       SCMP_SYS(clock_nanosleep),
};

/* The keeper's alone: libnftables waits for netlink replies with select,
 * and reopens its socket after ENOBUFS (bind, getsockname, O_NONBLOCK,
 * buffer sizes). */
static const int keeper_allowed[] = {
	SCMP_SYS(select),     SCMP_SYS(pselect6),   SCMP_SYS(bind),  SCMP_SYS(getsockname),
	SCMP_SYS(setsockopt), SCMP_SYS(getsockopt), SCMP_SYS(fcntl),
};

static int pivot_empty(char *err, size_t errlen)
{
	/* A mount namespace of our own even if the launcher shares its one:
	 * pivot_root moves every process whose root was the old one. */
	if (unshare(CLONE_NEWNS))
		return errf(err, errlen, -errno, "confine: a mount namespace: %s", strerror(errno));
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return errf(err, errlen, -errno, "confine: make mounts private: %s",
		            strerror(errno));
	if (mount("cove-egress", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	          "size=4k,nr_inodes=4,mode=0555"))
		return errf(err, errlen, -errno, "confine: tmpfs for the new root: %s",
		            strerror(errno));
	if (chdir("/tmp"))
		return errf(err, errlen, -errno, "confine: chdir: %s", strerror(errno));
	if (syscall(SYS_pivot_root, ".", "."))
		return errf(err, errlen, -errno, "confine: pivot_root: %s", strerror(errno));
	if (umount2(".", MNT_DETACH))
		return errf(err, errlen, -errno, "confine: detach the old root: %s",
		            strerror(errno));
	if (chdir("/"))
		return errf(err, errlen, -errno, "confine: chdir /: %s", strerror(errno));
	if (mount(NULL, "/", NULL,
	          MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return errf(err, errlen, -errno, "confine: read-only root: %s", strerror(errno));
	return 0;
}

/* The keeper keeps CAP_NET_ADMIN (namespaced: it rules only this netns);
 * the parser keeps nothing, not even in its bounding set. */
static int caps_down(enum confine_role role, char *err, size_t errlen)
{
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if ((role == CONFINE_PARSER || c != CAP_NET_ADMIN) &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return errf(err, errlen, -errno, "confine: drop capability %d: %s", c,
			            strerror(errno));
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	cap_t caps = cap_init();
	cap_value_t keep[] = { CAP_NET_ADMIN };
	int r = 0;
	if (!caps ||
	    (role == CONFINE_KEEPER && (cap_set_flag(caps, CAP_EFFECTIVE, 1, keep, CAP_SET) ||
	                                cap_set_flag(caps, CAP_PERMITTED, 1, keep, CAP_SET))) ||
	    cap_set_proc(caps))
		r = errf(err, errlen, -errno, "confine: %s: %s",
		         role == CONFINE_KEEPER ? "keep only CAP_NET_ADMIN"
		                                : "drop every capability",
		         strerror(errno));
	if (caps)
		cap_free(caps);
	return r;
}

static int add_list(scmp_filter_ctx ctx, const int *list, size_t n)
{
	int r = 0;
	for (size_t i = 0; !r && i < n; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, list[i], 0);
	return r;
}

#define LIST(a) (a), sizeof(a) / sizeof((a)[0])

static int filter(enum confine_role role, int log, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(log ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return errf(err, errlen, -ENOMEM, "confine: seccomp_init failed");
	int r = add_list(ctx, LIST(allowed));
	if (!r && role == CONFINE_PARSER) {
		/* New sockets: IPv4 only (upstream queries, proxy and publish
		 * dials); no netlink of any kind. */
		r = add_list(ctx, LIST(parser_allowed));
		struct scmp_arg_cmp fam = { .arg = 0, .op = SCMP_CMP_EQ, .datum_a = AF_INET };
		if (!r)
			r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, &fam);
	} else if (!r) {
		/* New sockets: netlink's nf_tables family only (libnftables
		 * reopens its socket after ENOBUFS); no route, no IP. */
		r = add_list(ctx, LIST(keeper_allowed));
		struct scmp_arg_cmp nl[2] = {
			{ .arg = 0, .op = SCMP_CMP_EQ, .datum_a = AF_NETLINK },
			{ .arg = 2, .op = SCMP_CMP_EQ, .datum_a = NETLINK_NETFILTER },
		};
		if (!r)
			r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2, nl);
	}
	if (!r)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r)
		return errf(err, errlen, r, "confine: seccomp: %s", strerror(-r));
	return 0;
}

int confine(enum confine_role role, int seccomp_log, char *err, size_t errlen)
{
	int r = pivot_empty(err, errlen);
	if (!r)
		r = caps_down(role, err, errlen);
	if (!r && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		r = errf(err, errlen, -errno, "confine: no_new_privs: %s", strerror(errno));
	if (!r)
		r = filter(role, seccomp_log, err, errlen);
	return r;
}
