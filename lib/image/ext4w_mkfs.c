/* An empty ext4 image by mkfs.ext4, spawned with a deadline; see
 * ext4w_mkfs.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errf.h"
#include "lib/image/ext4w_mkfs.h"

static const char *const g_mkfs[] = { "/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4",
	                              "/usr/local/sbin/mkfs.ext4" };

/* The child's stderr, kept to its first line. */
struct child_err {
	char text[256];
	size_t n;
};

static void take_err(int fd, struct child_err *ce)
{
	char buf[512];
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		size_t k = (size_t)r;
		if (k > sizeof(ce->text) - 1 - ce->n)
			k = sizeof(ce->text) - 1 - ce->n;
		memcpy(ce->text + ce->n, buf, k);
		ce->n += k;
	}
	ce->text[ce->n] = 0;
	char *nl = strchr(ce->text, '\n');
	if (nl)
		*nl = 0;
}

/* Waits for pid until deadline (CLOCK_MONOTONIC ms), reading its stderr
 * from efd; kills it past the deadline.  Returns its wait status or -1. */
static int wait_child(pid_t pid, int efd, int64_t deadline, struct child_err *ce)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int st = -1;
	for (;;) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			break;
		struct pollfd p[2] = { { .fd = efd, .events = POLLIN },
			               { .fd = pidfd, .events = POLLIN } };
		/* without a pidfd (an old kernel), look again every 20 ms */
		int n = poll(p, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? (int)left : 20);
		if (n < 0 && errno != EINTR)
			break;
		take_err(efd, ce);
		if (waitpid(pid, &st, WNOHANG) == pid) {
			take_err(efd, ce);
			if (pidfd >= 0)
				close(pidfd);
			return st;
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (pidfd >= 0)
		close(pidfd);
	return -1;
}

static int run(const char *const *argv, char *err, size_t errlen)
{
	static char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
	struct child_err ce = { .n = 0 };
	posix_spawn_file_actions_t fa;
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return errf(err, errlen, -errno, "pipe: %s", strerror(errno));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc) {
		close(pfd[0]);
		return errf(err, errlen, -rc, "%s: %s", argv[0], strerror(rc));
	}
	int st = wait_child(pid, pfd[0], mono_ms() + EXT4W_MKFS_TIMEOUT_MS, &ce);
	close(pfd[0]);
	if (st < 0)
		return errf(err, errlen, -ETIMEDOUT, "mkfs.ext4 did not finish in %d s",
		            EXT4W_MKFS_TIMEOUT_MS / 1000);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return errf(err, errlen, -EIO, "mkfs.ext4 failed: %s",
		            ce.text[0] ? ce.text : "no message");
	return 0;
}

static int label_ok(const char *label)
{
	size_t n = strlen(label);
	if (n > 16)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (label[i] < 0x20 || label[i] > 0x7e)
			return 0;
	return 1;
}

int ext4w_mkfs(const char *path, uint64_t bytes, uint64_t inodes, const char *label, char *err,
               size_t errlen)
{
	const char *mkfs = NULL;
	char nbuf[24], bbuf[24], file[4096 + 3];
	struct stat st;

	bytes &= ~4095ull;
	if (bytes < EXT4W_MKFS_MIN || bytes > EXT4W_MKFS_MAX)
		return errf(err, errlen, -EINVAL, "an image of %llu bytes (4 MiB to 16 TiB)",
		            (unsigned long long)bytes);
	if (inodes < 16 || inodes > UINT32_MAX || inodes > bytes / 1024)
		return errf(err, errlen, -EINVAL, "%llu inodes in %llu bytes",
		            (unsigned long long)inodes, (unsigned long long)bytes);
	if (label && !label_ok(label))
		return errf(err, errlen, -EINVAL,
		            "a volume label of printable ASCII, 16 bytes at most");
	for (size_t i = 0; i < sizeof(g_mkfs) / sizeof(g_mkfs[0]) && !mkfs; i++)
		if (access(g_mkfs[i], X_OK) == 0)
			mkfs = g_mkfs[i];
	if (!mkfs)
		return errf(err, errlen, -ENOENT, "mkfs.ext4 not found (install e2fsprogs)");
	/* "./" so that a name starting with '-' is not an option */
	if (snprintf(file, sizeof(file), "%s%s", path[0] == '/' ? "" : "./", path) >=
	    (int)sizeof(file))
		return errf(err, errlen, -ENAMETOOLONG, "an image path too long");
	int fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
	int rc = fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ? -EINVAL : 0;
	if (!rc && ftruncate(fd, (off_t)bytes) < 0)
		rc = -errno;
	close(fd);
	if (rc)
		return errf(err, errlen, rc, "%s: %s", path,
		            rc == -EINVAL ? "not a regular file" : strerror(-rc));
	snprintf(nbuf, sizeof(nbuf), "%llu", (unsigned long long)inodes);
	snprintf(bbuf, sizeof(bbuf), "%llu", (unsigned long long)(bytes / 4096));
	const char *argv[] = { mkfs,
		               "-q",
		               "-F",
		               "-b",
		               "4096",
		               "-I",
		               "256",
		               "-m",
		               "0",
		               "-N",
		               nbuf,
		               "-E",
		               "root_owner=0:0,assume_storage_prezeroed=1",
		               "-L",
		               label ? label : "",
		               file,
		               bbuf,
		               NULL };
	return run(argv, err, errlen);
}
