/* cove-vmm as a process: starting it (our child, or detached in a session
 * of its own), waiting until the guest agent is ready, telling why it died
 * early, and making it exit.  Every signal goes through its pidfd, so a
 * pid that was reused is never hit. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "io.h"
#include "lib/base/handle.h"
#include "lib/base/jail.h"
#include "lib/base/sandbox_net.h"
#include "lib/base/spawn.h"
#include "lib/base/text.h"
#include "lib/vmm/vmm_proc.h"
#include "proto.h"

void vmm_log_tail(const char *path, char *out, size_t len)
{
	out[0] = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) >= 0) {
		line[strcspn(line, "\r\n")] = 0;
		if (line[0])
			snprintf(out, len, "%s", line);
	}
	free(line);
	fclose(f);
}

bool vmm_killed_by_seccomp(struct cove_sandbox *sb)
{
	if (!sb->child || sb->pidfd < 0)
		return false;
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return false;
	return si.si_pid != 0 && si.si_code == CLD_KILLED && si.si_status == SIGSYS;
}

/* The message for a cove-vmm that died early: its log's last line, else
 * the console's; a seccomp kill is said as such. */
int vmm_died(struct cove_sandbox *sb, const char *log, const char *console, const char *when,
             char *err, size_t errlen)
{
	if (vmm_killed_by_seccomp(sb))
		return errf(err, errlen, -ECHILD,
		            "cove-vmm was killed %s by its seccomp filter: %s", when,
		            VMM_SECCOMP_KILLED);
	char why[448];
	vmm_log_tail(log, why, sizeof(why));
	if (!why[0])
		vmm_log_tail(console, why, sizeof(why));
	text_clean(why); /* the console's last line is the guest's */
	return errf(err, errlen, -ECHILD, "cove-vmm exited %s: %s", when,
	            why[0] ? why : "(no output)");
}

/* The jail's arguments for cove-vmm and the clone3 flags, decided in the
 * parent before the child exists (the child reads them from its copy). */
struct spawn_plan {
	char *const *argv;    /* as the caller gave it */
	const char *jargv[8]; /* --jail ROOT [--jail-uid U --jail-gid U] */
	char uid[16];
	bool jailed; /* append jargv */
	bool die_with_parent;
	bool low_priority; /* a pool member: nice 19 until its start request */
	uint64_t flags;
	int cgroup_fd;
	int go;     /* the child waits for a byte (or EOF) here before exec */
	int tap_fd; /* becomes cove-vmm's fd 3 (NET_TAP_FD); -1: no network */
};

/* In the child, before exec: stdin from /dev/null, stdout and stderr to
 * the log, default signal handling, no fd but these, an empty
 * environment.  Async-signal-safe calls only: the caller may have threads
 * (cove fork restores several at once). */
static void exec_vmm(const struct spawn_plan *p, const char *log)
{
	char c;
	/* Out of the way of 0-2 and 3, which are about to be replaced. */
	int tap = p->tap_fd >= 0 ? fcntl(p->tap_fd, F_DUPFD_CLOEXEC, 10) : -1;
	if (p->tap_fd >= 0 && tap < 0)
		_exit(127);
	if (p->die_with_parent)
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* cove-vmm sets it again once jailed */
	if (p->low_priority)
		(void)setpriority(PRIO_PROCESS, 0, 19);
	if (read(p->go, &c, 1) != 1)
		_exit(127); /* the parent gave up, or died before the prctl */
	int null = open("/dev/null", O_RDWR);
	int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
	if (null < 0 || logfd < 0)
		_exit(127);
	dup2(null, 0);
	dup2(logfd, 1);
	dup2(logfd, 2);
	spawn_signals_default();
	/* Nothing of ours leaks into the VMM. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		for (int fd = 3; fd < 1024; fd++)
			(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	/* The TAP, the one fd it inherits: --net fd=3 (dup2 clears CLOEXEC). */
	if (tap >= 0 && dup2(tap, NET_TAP_FD) != NET_TAP_FD)
		_exit(127);
	const char *argv[COVE_VMM_ARGS_MAX + 8];
	size_t n = 0;
	for (; p->argv[n] && n < COVE_VMM_ARGS_MAX; n++)
		argv[n] = p->argv[n];
	for (size_t i = 0; p->jailed && p->jargv[i]; i++)
		argv[n++] = p->jargv[i];
	argv[n] = NULL;
	static char *const no_env[] = { NULL };
	execve(argv[0], (char *const *)argv, no_env);
	dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Inside its user namespace the VMM is uid and gid 0, which is us outside:
 * the one mapping an unprivileged user may write. */
static int map_ids(pid_t pid)
{
	char u[32], g[32];
	snprintf(u, sizeof(u), "0 %u 1\n", (unsigned)geteuid());
	snprintf(g, sizeof(g), "0 %u 1\n", (unsigned)getegid());
	int r = spawn_write_proc(pid, "setgroups", "deny");
	if (r == 0)
		r = spawn_write_proc(pid, "uid_map", u);
	if (r == 0)
		r = spawn_write_proc(pid, "gid_map", g);
	return r;
}

static bool userns_refused(int e)
{
	return e == EPERM || e == EACCES || e == EINVAL || e == ENOSPC || e == EUSERS;
}

/* Starts the child: clone3 into the namespaces and the cgroup, else (user
 * namespaces refused here) without namespaces; the child then waits on
 * p->go.  Returns the pid (and *pidfd), or -errno. */
static pid_t start_child(struct spawn_plan *p, struct cove_sandbox *sb, const char *log, int *pidfd)
{
	for (;;) {
		pid_t pid = spawn_clone3(p->flags, p->cgroup_fd, pidfd);
		if (pid == 0)
			exec_vmm(p, log);
		if (pid < 0 && errno == ENOSYS && p->flags == 0) {
			*pidfd = -1;
			pid = fork(); /* before clone3 (Linux 5.3): no cgroup either */
			if (pid == 0)
				exec_vmm(p, log);
			if (pid > 0)
				*pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
			return pid < 0 ? -errno : pid;
		}
		int e = errno;
		if (pid > 0 && (p->flags & CLONE_NEWUSER)) {
			int r = map_ids(pid);
			if (r == 0)
				return pid;
			(void)syscall(SYS_pidfd_send_signal, *pidfd, SIGKILL, NULL, 0);
			close(*pidfd);
			waitpid(pid, NULL, 0);
			e = -r;
		} else if (pid > 0) {
			return pid;
		}
		if (!p->jailed || !((p->flags & CLONE_NEWUSER) ? userns_refused(e) : e == ENOSYS))
			return -e;
		/* No user namespace for us here: seccomp and no_new_privs only. */
		jail_without_namespaces(&sb->jail, e);
		p->jailed = false;
		p->flags = 0;
	}
}

static void plan_init(struct spawn_plan *p, char *const argv[], struct cove_sandbox *sb)
{
	memset(p, 0, sizeof(*p));
	p->argv = argv;
	p->cgroup_fd = sb->jail.cgroup_fd;
	p->tap_fd = sb->net.tap_fd;
	p->jailed = sb->jail.namespaces;
	/* Only root may take the priority back (cove-vmm, at its claim). */
	p->low_priority = sb->pool_member && geteuid() == 0;
	size_t n = 0;
	p->jargv[n++] = "--jail";
	p->jargv[n++] = sb->root;
	if (sb->jail.ids) {
		snprintf(p->uid, sizeof(p->uid), "%u", (unsigned)sb->jail.uid);
		p->jargv[n++] = "--jail-uid";
		p->jargv[n++] = p->uid;
	}
	p->jargv[n] = NULL;
	if (p->jailed)
		p->flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNET |
		           (sb->jail.userns ? CLONE_NEWUSER : 0);
}

/* The start log's first line: what confines this sandbox. */
void vmm_log_line(const char *log, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		(void)!dprintf(fd, "cove: %s\n", line);
		close(fd);
	}
}

void vmm_log_confinement(const struct cove_sandbox *sb, const char *log)
{
	char line[1024];
	jail_describe(&sb->jail, line, sizeof(line));
	vmm_log_line(log, "%s", line);
}

/* cove-vmm as our child, killed when we die (PR_SET_PDEATHSIG; a child
 * whose parent died before that reads EOF on the go pipe and exits). */
static int spawn_child(struct spawn_plan *p, const char *log, struct cove_sandbox *sb)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	p->go = go[0];
	p->die_with_parent = true;
	int pidfd = -1;
	pid_t pid = start_child(p, sb, log, &pidfd);
	close(go[0]);
	if (pid < 0) {
		close(go[1]);
		return (int)pid;
	}
	if (pidfd < 0) {
		int e = errno;
		close(go[1]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -e;
	}
	sb->pidfd = pidfd;
	sb->pid = pid;
	sb->child = true;
	vmm_log_confinement(sb, log);
	(void)!write(go[1], "g", 1);
	close(go[1]);
	return 0;
}

/* cove-vmm detached: a grandchild in a session of its own, so it neither
 * dies with us nor stays our zombie.  The middle child reports its pid; the
 * grandchild waits for our go before exec, so the pid we open a pidfd on
 * cannot have been reused. */
static int spawn_detached(struct spawn_plan *p, const char *log, struct cove_sandbox *sb)
{
	int up[2], go[2];
	if (pipe2(up, O_CLOEXEC) < 0)
		return -errno;
	/* A socket, not a pipe: the go message is sent with MSG_NOSIGNAL. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0) {
		int e = errno;
		close(up[0]);
		close(up[1]);
		return -e;
	}
	pid_t mid = fork();
	if (mid == 0) {
		setsid();
		close(go[0]); /* EOF reaches the grandchild when the parent gives up */
		p->go = go[1];
		int pidfd = -1;
		pid_t pid = start_child(p, sb, log, &pidfd);
		/* What start_child learnt (no user namespace) travels up too. */
		int v[2] = { pid, p->jailed };
		_exit(write(up[1], v, sizeof(v)) == sizeof(v) ? 0 : 1);
	}
	int r = mid < 0 ? -errno : 0, v[2] = { 0, 0 };
	close(up[1]);
	close(go[1]);
	if (r == 0) {
		ssize_t n = read_full(up[0], v, sizeof(v));
		waitpid(mid, NULL, 0);
		r = n != sizeof(v) ? -ECHILD : v[0] < 0 ? v[0] : 0;
	}
	close(up[0]);
	if (r == 0 && p->jailed && !v[1])
		jail_without_namespaces(&sb->jail, EPERM);
	if (r == 0) {
		sb->pidfd = (int)syscall(SYS_pidfd_open, v[0], 0);
		if (sb->pidfd < 0)
			r = -errno; /* the grandchild reads EOF and exits */
		else
			sb->pid = v[0];
	}
	/* A grandchild that died already shows through the pidfd. */
	if (r == 0) {
		vmm_log_confinement(sb, log);
		(void)!send(go[0], "g", 1, MSG_NOSIGNAL);
	}
	close(go[0]);
	return r;
}

int vmm_spawn(char *const argv[], bool detached, const char *log, struct cove_sandbox *sb,
              char *err, size_t errlen)
{
	struct spawn_plan p;
	plan_init(&p, argv, sb);
	int r = detached ? spawn_detached(&p, log, sb) : spawn_child(&p, log, sb);
	if (r < 0)
		return errf(err, errlen, r, "cannot start cove-vmm: %s", strerror(-r));
	return 0;
}

int vmm_wait_ready(struct cove_sandbox *sb, int lfd, unsigned int timeout_ms, const char *console,
                   const char *log, char *err, size_t errlen)
{
	int64_t deadline = mono_ms() + timeout_ms;
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return errf(err, errlen, -ETIMEDOUT,
			            "the guest agent did not start within %u ms (console: %s)",
			            timeout_ms, console);
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
			               { .fd = sb->pidfd, .events = POLLIN } };
		if (poll(p, 2, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return errf(err, errlen, -errno, "poll: %s", strerror(errno));
		}
		if (p[1].revents)
			return vmm_died(sb, log, console, "before the agent started", err, errlen);
		if (!p[0].revents)
			continue;
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		/* The HELLO too is waited for only until the boot deadline: a
		 * peer that connects and says nothing cannot hold us. */
		struct proto_hdr h;
		uint8_t *payload = NULL;
		int r = proto_recv_until(c, &h, &payload, deadline);
		close(c);
		free(payload);
		if (r == 0 && h.type == PROTO_HELLO)
			return 0;
	}
}

/* Waits up to ms for cove-vmm to exit; true when it did (and, when it is
 * our child, is reaped). */
static bool wait_exit(struct cove_sandbox *sb, int ms)
{
	if (!fd_wait_readable(sb->pidfd, ms))
		return false;
	int status;
	if (sb->child && waitpid(sb->pid, &status, 0) == sb->pid)
		sb->vmm_status = status;
	return true;
}

static void signal_vmm(struct cove_sandbox *sb, int sig)
{
	/* Through the pidfd: never a process that reused the pid. */
	(void)syscall(SYS_pidfd_send_signal, sb->pidfd, sig, NULL, 0);
}

void vmm_reap(struct cove_sandbox *sb, int grace_ms)
{
	if (sb->pidfd < 0)
		return;
	if (!wait_exit(sb, grace_ms)) {
		/* SIGCONT too: a stopped VMM handles its SIGTERM only once it
		 * runs again. */
		signal_vmm(sb, SIGTERM);
		signal_vmm(sb, SIGCONT);
		if (!wait_exit(sb, VMM_TERM_MS)) {
			signal_vmm(sb, SIGKILL);
			wait_exit(sb, VMM_KILL_MS);
		}
	}
	close(sb->pidfd);
	sb->pidfd = -1;
}
