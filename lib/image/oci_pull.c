/* Registry pulls through skopeo (lib/image/oci_pull.h).  The child gets
 * its own process group, /dev/null for stdin and stdout and a pipe for
 * stderr; at the deadline the group is killed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/base/spawn.h"
#include "lib/image/oci_pull.h"

#define STDERR_KEEP 2048

bool oci_pull_ref_valid(const char *ref)
{
	size_t n = ref ? strlen(ref) : 0;
	if (n == 0 || n > OCI_PULL_REF_MAX ||
	    !((ref[0] >= 'a' && ref[0] <= 'z') || (ref[0] >= 'A' && ref[0] <= 'Z') ||
	      (ref[0] >= '0' && ref[0] <= '9')))
		return false; /* a name starts with a letter or digit: not an option, not a path */
	for (size_t i = 0; i < n; i++) {
		char c = ref[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("._-/:@", c)))
			return false;
	}
	return true;
}

int oci_pull_cmd(struct oci_pull_cmd *c, const char *skopeo, const char *ref, const char *dir,
                 const char *tag)
{
	memset(c, 0, sizeof(*c));
	if ((size_t)snprintf(c->src, sizeof(c->src), "docker://%s", ref) >= sizeof(c->src) ||
	    (size_t)snprintf(c->dst, sizeof(c->dst), "oci:%s:%s", dir, tag) >= sizeof(c->dst))
		return -EINVAL;
	const char *a[] = {
		skopeo, "copy", "--quiet", "--override-os", "linux", "--override-arch", "amd64",
		c->src, c->dst, NULL
	};
	memcpy(c->argv, a, sizeof(a));
	return 0;
}

/* The executable @name in PATH into @out; false when there is none. */
static bool find_in_path(const char *name, char *out, size_t n)
{
	const char *path = getenv("PATH");
	for (const char *p = path ? path : ""; *p;) {
		const char *e = strchrnul(p, ':');
		if (e > p && (size_t)snprintf(out, n, "%.*s/%s", (int)(e - p), p, name) < n &&
		    access(out, X_OK) == 0)
			return true;
		p = *e ? e + 1 : e;
	}
	return false;
}

/* In the child: stdin and stdout /dev/null, stderr the pipe, then exec. */
static void child(int errfd, const char *const *argv)
{
	int null = open("/dev/null", O_RDWR);
	setpgid(0, 0);
	spawn_signals_default();
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(errfd, 2) < 0)
		_exit(126);
	closefrom(3);
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

/* Reads the child's stderr until it ends or the deadline passes, keeping
 * the last bytes; false at the deadline. */
static bool drain(int fd, int64_t deadline, char *keep, size_t *kept)
{
	char buf[1024];
	for (;;) {
		int64_t left = deadline - mono_ms();
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (left <= 0)
			return false;
		int r = poll(&p, 1, left > 1000 ? 1000 : (int)left);
		if (r < 0 && errno != EINTR)
			return true;
		if (r <= 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return true;
		if (*kept + (size_t)n > STDERR_KEEP - 1) { /* keep the newest */
			size_t drop = *kept + (size_t)n - (STDERR_KEEP - 1);
			drop = drop > *kept ? *kept : drop;
			memmove(keep, keep + drop, *kept - drop);
			*kept -= drop;
		}
		size_t take =
		    (size_t)n > STDERR_KEEP - 1 - *kept ? STDERR_KEEP - 1 - *kept : (size_t)n;
		memcpy(keep + *kept, buf + n - take, take);
		*kept += take;
	}
}

/* Waits for @pid until @deadline; kills its group after it.  Its wait
 * status, -1 when it was killed at the deadline, or -2 when its status is
 * lost (a caller that ignores SIGCHLD). */
static int reap(pid_t pid, int64_t deadline)
{
	int st = 0;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return st;
		if (w < 0 && errno != EINTR)
			return -2;
		if (mono_ms() >= deadline)
			break;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return -1;
}

/* The last non-empty line of @s (changed in place). */
static const char *last_line(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
	char *nl = strrchr(s, '\n');
	return nl ? nl + 1 : s;
}

int oci_pull(const char *ref, const char *dir, const char *tag, int timeout_ms, char *err,
             size_t errlen)
{
	char skopeo[4096];
	struct oci_pull_cmd c;
	if (!oci_pull_ref_valid(ref))
		return errf(err, errlen, -EINVAL, "'%.600s' is not an image reference", ref);
	if (!find_in_path("skopeo", skopeo, sizeof(skopeo)))
		return errf(err, errlen, -ENOENT,
		            "pulling '%s' needs skopeo, which is not installed (not in PATH); "
		            "use oci:, oci-archive: or docker-archive: for local images",
		            ref);
	if (oci_pull_cmd(&c, skopeo, ref, dir, tag) < 0)
		return errf(err, errlen, -EINVAL, "'%s': a name is too long", ref);
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return errf(err, errlen, -errno, "pipe: %s", strerror(errno));
	int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 1);
	pid_t pid = fork();
	if (pid == 0)
		child(pfd[1], c.argv);
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return errf(err, errlen, -errno, "fork: %s", strerror(errno));
	}
	char keep[STDERR_KEEP];
	size_t kept = 0;
	bool ended = drain(pfd[0], deadline, keep, &kept);
	close(pfd[0]);
	int st = reap(pid, ended ? deadline : mono_ms());
	keep[kept] = '\0';
	if (st == -2)
		return errf(err, errlen, -ECHILD, "skopeo copy %s: its exit status was lost",
		            c.src);
	if (st < 0)
		return errf(err, errlen, -ETIMEDOUT, "skopeo copy %s: no end within %.1f s", c.src,
		            timeout_ms / 1000.0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	const char *line = last_line(keep);
	if (WIFEXITED(st))
		return errf(err, errlen, -EIO, "skopeo copy %s failed (status %d): %.400s", c.src,
		            WEXITSTATUS(st), *line ? line : "no message");
	return errf(err, errlen, -EIO, "skopeo copy %s: killed by signal %d", c.src, WTERMSIG(st));
}
