#include "confine.h"

#include <errno.h>
#include <linux/capability.h>
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

/* The event loop's needs after setup, and why. */
static const int allowed[] = {
	/* epoll loop, timers (vDSO fallbacks) */
	SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait),
	SCMP_SYS(epoll_ctl),
	SCMP_SYS(clock_gettime),
	SCMP_SYS(gettimeofday),
	SCMP_SYS(clock_nanosleep),
	/* sockets: guest, upstream, servers, ctl clients, NFLOG, libnftables */
	SCMP_SYS(connect),
	SCMP_SYS(accept4),
	SCMP_SYS(recvfrom),
	SCMP_SYS(sendto),
	SCMP_SYS(recvmsg),
	SCMP_SYS(sendmsg),
	SCMP_SYS(shutdown),
	SCMP_SYS(setsockopt),
	SCMP_SYS(getsockopt),
	SCMP_SYS(getsockname),
	SCMP_SYS(bind),
	SCMP_SYS(close),
	SCMP_SYS(fcntl),
	SCMP_SYS(read),
	SCMP_SYS(write),
	SCMP_SYS(writev),
	SCMP_SYS(getrandom),
	SCMP_SYS(getpid),
	/* signalfd (SIGTERM) */
	SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigprocmask),
	/* memory */
	SCMP_SYS(brk),
	SCMP_SYS(mmap),
	SCMP_SYS(munmap),
	SCMP_SYS(mremap),
	SCMP_SYS(madvise),
	/* libnftables: fstat of its output buffers (fmemopen/open_memstream) */
	SCMP_SYS(newfstatat),
	SCMP_SYS(fstat),
	SCMP_SYS(lseek),
	/* libnftables waits for netlink replies with select (pselect6) */
	SCMP_SYS(select),
	SCMP_SYS(pselect6),
	SCMP_SYS(poll),
	SCMP_SYS(ppoll),
	SCMP_SYS(futex),
	SCMP_SYS(restart_syscall),
	SCMP_SYS(exit),
	SCMP_SYS(exit_group),
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

static int caps_down(char *err, size_t errlen)
{
	for (int c = 0; c <= CAP_LAST_CAP; c++)
		if (c != CAP_NET_ADMIN && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return errf(err, errlen, -errno, "confine: drop capability %d: %s", c,
			            strerror(errno));
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	cap_t caps = cap_init();
	cap_value_t keep[] = { CAP_NET_ADMIN };
	int r = 0;
	if (!caps || cap_set_flag(caps, CAP_EFFECTIVE, 1, keep, CAP_SET) ||
	    cap_set_flag(caps, CAP_PERMITTED, 1, keep, CAP_SET) || cap_set_proc(caps))
		r = errf(err, errlen, -errno, "confine: keep only CAP_NET_ADMIN: %s",
		         strerror(errno));
	if (caps)
		cap_free(caps);
	return r;
}

static int filter(int log, char *err, size_t errlen)
{
	scmp_filter_ctx ctx = seccomp_init(log ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS);
	if (!ctx)
		return errf(err, errlen, -ENOMEM, "confine: seccomp_init failed");
	int r = 0;
	for (size_t i = 0; !r && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
	/* New sockets: IPv4 (upstream queries, proxy and publish dials) and
	 * netlink (libnftables reopens its socket after ENOBUFS); no others. */
	static const int families[] = { AF_INET, AF_NETLINK };
	for (size_t i = 0; !r && i < sizeof(families) / sizeof(families[0]); i++) {
		struct scmp_arg_cmp fam = { .arg = 0,
			                    .op = SCMP_CMP_EQ,
			                    .datum_a = (scmp_datum_t)families[i],
			                    .datum_b = 0 };
		r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1, &fam);
	}
	if (!r)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r)
		return errf(err, errlen, r, "confine: seccomp: %s", strerror(-r));
	return 0;
}

int confine(int seccomp_log, char *err, size_t errlen)
{
	int r = pivot_empty(err, errlen);
	if (!r)
		r = caps_down(err, errlen);
	if (!r && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		r = errf(err, errlen, -errno, "confine: no_new_privs: %s", strerror(errno));
	if (!r)
		r = filter(seccomp_log, err, errlen);
	return r;
}
