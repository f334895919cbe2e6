/* cove-vmm as a process: starting it (our child, or detached in a session
 * of its own), waiting until the guest agent is ready, telling why it died
 * early, and making it exit.  Every signal goes through its pidfd, so a
 * pid that was reused is never hit. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "io.h"
#include "libcove.h"
#include "proto.h"
#include "text.h"

int vmm_listen(const char *path)
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
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/* The last non-empty line of a file, however long (cut to fit out). */
static void tail_file(const char *path, char *out, size_t len)
{
	out[0] = 0;
	FILE *f = fopen(path, "r");
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

/* The message for a cove-vmm that died early: its log's last line, else
 * the console's. */
static int vmm_died(const char *log, const char *console, const char *when, char *err,
                    size_t errlen)
{
	char why[448];
	tail_file(log, why, sizeof(why));
	if (!why[0])
		tail_file(console, why, sizeof(why));
	text_clean(why); /* the console's last line is the guest's */
	return errf(err, errlen, -ECHILD, "cove-vmm exited %s: %s", when,
	            why[0] ? why : "(no output)");
}

/* In the child, before exec: stdin from /dev/null, stdout and stderr to
 * the log, default signal handling.  Async-signal-safe calls only: the
 * caller may have threads (cove fork restores several at once). */
static void exec_vmm(char *const argv[], const char *log)
{
	int null = open("/dev/null", O_RDWR);
	int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (null < 0 || logfd < 0)
		_exit(127);
	dup2(null, 0);
	dup2(logfd, 1);
	dup2(logfd, 2);
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &dfl, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execv(argv[0], argv);
	dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* cove-vmm as our child, killed when we die (PR_SET_PDEATHSIG). */
static int spawn_child(char *const argv[], const char *log, struct cove_sandbox *sb)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		setpgid(0, 0); /* a terminal's ^C goes to us, not straight to the VMM */
		exec_vmm(argv, log);
	}
	sb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (sb->pidfd < 0) {
		int e = errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -e;
	}
	sb->pid = pid;
	sb->child = true;
	return 0;
}

/* cove-vmm detached: a grandchild in a session of its own, so it neither
 * dies with us nor stays our zombie.  The middle child reports its pid; the
 * grandchild waits for our go before exec, so the pid we open a pidfd on
 * cannot have been reused. */
static int spawn_detached(char *const argv[], const char *log, struct cove_sandbox *sb)
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
		pid_t pid = fork();
		if (pid != 0) {
			int v = pid < 0 ? -errno : pid;
			_exit(write(up[1], &v, sizeof(v)) == sizeof(v) ? 0 : 1);
		}
		close(go[0]); /* EOF reaches us when the parent gives up */
		char c;
		if (read(go[1], &c, 1) != 1)
			_exit(127);
		exec_vmm(argv, log);
	}
	int r = mid < 0 ? -errno : 0, v = 0;
	close(up[1]);
	close(go[1]);
	if (r == 0) {
		ssize_t n = read_full(up[0], &v, sizeof(v));
		waitpid(mid, NULL, 0);
		r = n != sizeof(v) ? -ECHILD : v < 0 ? v : 0;
	}
	close(up[0]);
	if (r == 0) {
		sb->pidfd = (int)syscall(SYS_pidfd_open, v, 0);
		if (sb->pidfd < 0)
			r = -errno; /* the grandchild reads EOF and exits */
		else
			sb->pid = v;
	}
	/* A grandchild that died already shows through the pidfd. */
	if (r == 0)
		(void)!send(go[0], "g", 1, MSG_NOSIGNAL);
	close(go[0]);
	return r;
}

int vmm_spawn(char *const argv[], bool detached, const char *log, struct cove_sandbox *sb,
              char *err, size_t errlen)
{
	int r = detached ? spawn_detached(argv, log, sb) : spawn_child(argv, log, sb);
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
			return vmm_died(log, console, "before the agent started", err, errlen);
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

int vmm_wait_agent(struct cove_sandbox *sb, unsigned int timeout_ms, const char *console,
                   const char *log, char *err, size_t errlen)
{
	int64_t deadline = mono_ms() + timeout_ms;
	for (;;) {
		int fd = cove_agent_connect(sb, err, errlen);
		if (fd >= 0)
			return fd;
		if (fd != -ENOENT && fd != -ECONNREFUSED)
			return fd;
		struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
		int n = poll(&p, 1, 1);
		if (n < 0 && errno != EINTR)
			return errf(err, errlen, -errno, "poll: %s", strerror(errno));
		if (n > 0)
			return vmm_died(log, console, "during the restore", err, errlen);
		if (mono_ms() >= deadline)
			return errf(err, errlen, -ETIMEDOUT,
			            "the restored agent did not answer within %u ms "
			            "(console: %s)",
			            timeout_ms, console);
	}
}

/* Waits up to ms for cove-vmm to exit; true when it did (and, when it is
 * our child, is reaped). */
static bool wait_exit(struct cove_sandbox *sb, int ms)
{
	struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
	int64_t deadline = mono_ms() + ms;
	for (;;) {
		int64_t left = deadline - mono_ms();
		int n = poll(&p, 1, left > 0 ? (int)left : 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		break;
	}
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
