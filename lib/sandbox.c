/* Sandbox lifecycle: runtime directory, root disk copy, cove-vmm child,
 * the agent's readiness handshake, shutdown and clean-up. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "sandbox_priv.h"

/* build/bin/<exe> -> build/<rel>; NULL when /proc/self/exe is unreadable. */
static char *beside_exe(const char *rel)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0; /* build/bin */
	char *out = NULL;
	if (!strncmp(rel, "bin/", 4)) {
		if (asprintf(&out, "%s/%s", exe, rel + 4) < 0)
			return NULL;
		return out;
	}
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0; /* build */
	if (asprintf(&out, "%s/%s", exe, rel) < 0)
		return NULL;
	return out;
}

static const char *env_or(const char *name, const char *rel, char **keep)
{
	const char *v = getenv(name);
	if (v && *v)
		return v;
	*keep = beside_exe(rel);
	return *keep;
}

void cove_config_defaults(struct cove_config *cfg)
{
	/* The strings live for the process: defaults are resolved once. */
	static char *vmm, *kernel, *image;
	memset(cfg, 0, sizeof(*cfg));
	cfg->vmm = vmm ? vmm : (char *)env_or("COVE_VMM", "bin/cove-vmm", &vmm);
	cfg->kernel = kernel ? kernel : (char *)env_or("COVE_KERNEL", "vmlinux", &kernel);
	if (!image)
		image = cove_image_path(getenv("COVE_IMAGE") ? getenv("COVE_IMAGE") : "minimal");
	cfg->image = image;
	cfg->cpus = 1;
	cfg->memory_mib = 256;
	cfg->boot_timeout_ms = 60000;
}

char *cove_image_path(const char *name)
{
	if (!name || !*name)
		return NULL;
	if (strchr(name, '/') || strstr(name, ".ext4") || strstr(name, ".img"))
		return strdup(name);
	char *out = NULL;
	const char *dir = getenv("COVE_IMAGES");
	if (dir && *dir) {
		if (asprintf(&out, "%s/%s.ext4", dir, name) < 0)
			return NULL;
		return out;
	}
	char rel[128];
	snprintf(rel, sizeof(rel), "images/%s.ext4", name);
	return beside_exe(rel);
}

const char *cove_sandbox_dir(const struct cove_sandbox *sb)
{
	return sb->dir;
}

pid_t cove_vmm_pid(const struct cove_sandbox *sb)
{
	return sb->pid;
}

/* $COVE_RUNTIME_DIR, $XDG_RUNTIME_DIR/cove, /run/cove for root, else
 * /tmp/cove-<uid>; created 0700. */
static int runtime_base(char *out, size_t len)
{
	const char *v = getenv("COVE_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	if (v && *v)
		snprintf(out, len, "%s", v);
	else if (xdg && *xdg)
		snprintf(out, len, "%s/cove", xdg);
	else if (geteuid() == 0)
		snprintf(out, len, "/run/cove");
	else
		snprintf(out, len, "/tmp/cove-%u", (unsigned)geteuid());
	if (strlen(out) + sizeof("/sb-XXXXXX") > SANDBOX_DIR_MAX)
		return -ENAMETOOLONG;
	if (mkdir(out, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Copies [off, off + len) between two files: copy_file_range where the
 * kernel can (same file system), else read and write. */
static int copy_range(int in, int out, off_t off, off_t len)
{
	loff_t a = off, b = off;
	while (len > 0) {
		ssize_t n = copy_file_range(in, &a, out, &b, (size_t)len, 0);
		if (n > 0) {
			len -= n;
			continue;
		}
		if (n == 0)
			return -EIO;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
			return -errno;
		break;
	}
	char buf[1 << 14];
	while (len > 0) {
		ssize_t n = pread(in, buf, len < (off_t)sizeof(buf) ? (size_t)len : sizeof(buf), a);
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(out, buf + done, (size_t)(n - done), b + done);
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			done += w;
		}
		a += n;
		b += n;
		len -= n;
	}
	return 0;
}

/* Copies an image sharing blocks where the file system can (FICLONE),
 * else sparsely: holes stay holes. */
static int copy_image(const char *src, const char *dst, char *err, size_t errlen)
{
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return cove_fail(err, errlen, -errno, "cannot open image '%s': %s", src,
		                 strerror(errno));
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0) {
		int e = errno;
		close(in);
		return cove_fail(err, errlen, -e, "cannot create '%s': %s", dst, strerror(e));
	}
	struct stat st;
	int r = fstat(in, &st) < 0 ? -errno : 0;
	if (r == 0 && ioctl(out, FICLONE, in) == 0)
		goto done;
	if (r == 0 && ftruncate(out, st.st_size) < 0)
		r = -errno;
	off_t pos = 0;
	while (r == 0 && pos < st.st_size) {
		off_t data = lseek(in, pos, SEEK_DATA);
		if (data < 0)
			break; /* the rest is a hole */
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			hole = st.st_size;
		r = copy_range(in, out, data, hole - data);
		pos = hole;
	}
done:
	close(in);
	if (close(out) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		return cove_fail(err, errlen, r, "copying image '%s': %s", src, strerror(-r));
	return 0;
}

static int remove_tree(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		if (e->d_type == DT_DIR)
			remove_tree(p);
		else
			unlink(p);
	}
	closedir(d);
	return rmdir(path) < 0 ? -errno : 0;
}

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
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static void tail_file(const char *path, char *out, size_t len)
{
	out[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[256], last[256] = "";
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\r\n")] = 0;
		if (line[0])
			snprintf(last, sizeof(last), "%s", line);
	}
	fclose(f);
	snprintf(out, len, "%s", last);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pid_t spawn_vmm(const struct cove_config *cfg, struct cove_sandbox *sb, const char *disk,
                       const char *console, const char *log)
{
	char cpus[16], mem[32], disk_arg[PATH_MAX + 16], cmdline[1024];
	snprintf(cpus, sizeof(cpus), "%u", cfg->cpus ? cfg->cpus : 1);
	snprintf(mem, sizeof(mem), "%llu",
	         (unsigned long long)(cfg->memory_mib ? cfg->memory_mib : 256));
	snprintf(disk_arg, sizeof(disk_arg), "%s,id=cove-root", disk);
	snprintf(cmdline, sizeof(cmdline), "quiet cove.hostname=%s%s%s",
	         cfg->hostname ? cfg->hostname : "cove", cfg->cmdline ? " " : "",
	         cfg->cmdline ? cfg->cmdline : "");
	const char *argv[] = { cfg->vmm, "--kernel",  cfg->kernel, "--disk",
		               disk_arg, "--vsock",   sb->vsock,   "--cpus",
		               cpus,     "--memory",  mem,         "--console",
		               console,  "--cmdline", cmdline,     NULL };
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid != 0)
		return pid < 0 ? -errno : pid;
	/* Child: the VMM must not outlive us, nor inherit our stdio. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	int null = open("/dev/null", O_RDWR);
	int logfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (null < 0 || logfd < 0)
		_exit(127);
	dup2(null, 0);
	dup2(logfd, 1);
	dup2(logfd, 2);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setpgid(0, 0); /* a terminal's ^C goes to us, not straight to the VMM */
	execv(cfg->vmm, (char *const *)argv);
	dprintf(2, "cannot run %s: %s\n", cfg->vmm, strerror(errno));
	_exit(127);
}

static int check_inputs(const struct cove_config *cfg, char *err, size_t errlen)
{
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return cove_fail(err, errlen, -ENODEV,
		                 "no usable /dev/kvm here (%s); on a machine without KVM run "
		                 "Cove through scripts/kvm-host",
		                 strerror(errno));
	close(kvm);
	struct {
		const char *path, *what;
	} need[] = { { cfg->vmm, "cove-vmm" }, { cfg->kernel, "kernel" }, { cfg->image, "image" } };
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (!need[i].path)
			return cove_fail(err, errlen, -EINVAL, "no %s configured", need[i].what);
		if (access(need[i].path, R_OK) < 0)
			return cove_fail(err, errlen, -errno, "%s '%s': %s (run make)",
			                 need[i].what, need[i].path, strerror(errno));
	}
	return 0;
}

/* Waits for the agent's ready connection, or cove-vmm's death. */
static int wait_ready(struct cove_sandbox *sb, int lfd, const struct cove_config *cfg,
                      const char *console, const char *log, char *err, size_t errlen)
{
	int64_t deadline = now_ms() + (cfg->boot_timeout_ms ? cfg->boot_timeout_ms : 60000);
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return cove_fail(err, errlen, -ETIMEDOUT,
			                 "the guest agent did not start within %u ms (console: %s)",
			                 cfg->boot_timeout_ms, console);
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
			               { .fd = sb->pidfd, .events = POLLIN } };
		if (poll(p, 2, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return cove_fail(err, errlen, -errno, "poll: %s", strerror(errno));
		}
		if (p[1].revents) {
			char why[256];
			tail_file(log, why, sizeof(why));
			if (!why[0])
				tail_file(console, why, sizeof(why));
			return cove_fail(err, errlen, -ECHILD,
			                 "cove-vmm exited before the agent "
			                 "started: %s",
			                 why[0] ? why : "(no output)");
		}
		if (!p[0].revents)
			continue;
		int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		struct proto_hdr h;
		uint8_t *payload = NULL;
		int r = proto_recv(c, &h, &payload);
		close(c);
		free(payload);
		if (r == 0 && h.type == PROTO_HELLO)
			return 0;
	}
}

int cove_start(const struct cove_config *cfg, struct cove_sandbox **out, char *err, size_t errlen)
{
	*out = NULL;
	int r = check_inputs(cfg, err, errlen);
	if (r < 0)
		return r;
	struct cove_sandbox *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return cove_fail(err, errlen, -ENOMEM, "out of memory");
	sb->pidfd = -1;
	int lfd = -1;
	char base[PATH_MAX - 64], disk[PATH_MAX], ready[PATH_MAX], console[PATH_MAX], log[PATH_MAX];
	if ((r = runtime_base(base, sizeof(base))) < 0) {
		cove_fail(err, errlen, r, "cannot create the runtime directory %s: %s", base,
		          strerror(-r));
		goto fail;
	}
	snprintf(sb->dir, sizeof(sb->dir), "%.*s/sb-XXXXXX", SANDBOX_DIR_MAX - 12, base);
	if (!mkdtemp(sb->dir)) {
		r = cove_fail(err, errlen, -errno, "cannot create a sandbox directory in %s: %s",
		              base, strerror(errno));
		sb->dir[0] = 0;
		goto fail;
	}
	snprintf(sb->vsock, sizeof(sb->vsock), "%s/vsock", sb->dir);
	snprintf(disk, sizeof(disk), "%s/root.img", sb->dir);
	snprintf(ready, sizeof(ready), "%s_%u", sb->vsock, PROTO_READY_PORT);
	snprintf(log, sizeof(log), "%s/vmm.log", sb->dir);
	if (cfg->console_log)
		snprintf(console, sizeof(console), "%s", cfg->console_log);
	else
		snprintf(console, sizeof(console), "%s/console.log", sb->dir);
	if ((r = copy_image(cfg->image, disk, err, errlen)) < 0)
		goto fail;
	lfd = listen_unix(ready);
	if (lfd < 0) {
		r = cove_fail(err, errlen, lfd, "cannot listen on %s: %s", ready, strerror(-lfd));
		goto fail;
	}
	sb->pid = spawn_vmm(cfg, sb, disk, console, log);
	if (sb->pid < 0) {
		r = cove_fail(err, errlen, sb->pid, "cannot start cove-vmm: %s",
		              strerror(-sb->pid));
		sb->pid = 0;
		goto fail;
	}
	sb->pidfd = (int)syscall(SYS_pidfd_open, sb->pid, 0);
	if (sb->pidfd < 0) {
		r = cove_fail(err, errlen, -errno, "pidfd_open: %s", strerror(errno));
		goto fail;
	}
	if ((r = wait_ready(sb, lfd, cfg, console, log, err, errlen)) < 0)
		goto fail;
	close(lfd);
	unlink(ready);
	*out = sb;
	return 0;
fail:
	if (lfd >= 0)
		close(lfd);
	cove_free(sb);
	return r;
}

/* Waits up to ms for cove-vmm to exit; true when it did (and is reaped). */
static bool wait_exit(struct cove_sandbox *sb, int ms)
{
	struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
	int64_t deadline = now_ms() + ms;
	while (sb->pidfd >= 0) {
		int64_t left = deadline - now_ms();
		if (left < 0)
			left = 0;
		int n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		break;
	}
	int status;
	if (waitpid(sb->pid, &status, 0) == sb->pid)
		sb->vmm_status = status;
	return true;
}

int cove_stop(struct cove_sandbox *sb)
{
	if (!sb || sb->stopped)
		return 0;
	sb->stopped = true;
	if (sb->pid > 0) {
		char err[128];
		int fd = cove_agent_connect(sb, err, sizeof(err));
		if (fd >= 0) {
			if (proto_send(fd, PROTO_SHUTDOWN, 0, "{}", 2) == 0)
				(void)cove_expect(fd, PROTO_OK, NULL, NULL, err, sizeof(err));
			close(fd);
		}
		if (!wait_exit(sb, fd >= 0 ? 10000 : 0)) {
			kill(sb->pid, SIGTERM);
			if (!wait_exit(sb, 3000)) {
				kill(sb->pid, SIGKILL);
				wait_exit(sb, 60000);
			}
		}
	}
	if (sb->pidfd >= 0)
		close(sb->pidfd);
	sb->pidfd = -1;
	if (sb->dir[0] && !getenv("COVE_KEEP_SANDBOX"))
		remove_tree(sb->dir);
	return 0;
}

void cove_free(struct cove_sandbox *sb)
{
	if (!sb)
		return;
	cove_stop(sb);
	free(sb);
}
