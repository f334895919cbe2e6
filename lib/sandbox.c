/* Sandbox lifecycle: the registry entry (runtime directory), the root
 * disk's qcow2 overlay, cove-vmm (a child, or detached in its own session),
 * the agent's readiness handshake or, after a restore, its first answer;
 * attaching by name, shutdown and clean-up. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "qcow2_create.h"
#include "sandbox_priv.h"

#define STOP_GRACE_MS 10000

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

const char *cove_sandbox_name(const struct cove_sandbox *sb)
{
	return sb->name;
}

pid_t cove_vmm_pid(const struct cove_sandbox *sb)
{
	return sb->pid;
}

bool cove_name_valid(const char *name)
{
	return registry_name_valid(name);
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

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
	return cove_fail(err, errlen, -ECHILD, "cove-vmm exited %s: %s", when,
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
		ssize_t n;
		do
			n = read(up[0], &v, sizeof(v));
		while (n < 0 && errno == EINTR);
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

static int check_inputs(const struct cove_config *cfg, bool boot, char *err, size_t errlen)
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
	size_t n = boot ? sizeof(need) / sizeof(need[0]) : 1;
	for (size_t i = 0; i < n; i++) {
		if (!need[i].path)
			return cove_fail(err, errlen, -EINVAL, "no %s configured", need[i].what);
		if (access(need[i].path, R_OK) < 0)
			return cove_fail(err, errlen, -errno, "%s '%s': %s (run make)",
			                 need[i].what, need[i].path, strerror(errno));
	}
	if (cfg->name && !registry_name_valid(cfg->name))
		return cove_fail(err, errlen, -EINVAL,
		                 "invalid sandbox name '%s': 1 to %d of A-Z a-z 0-9 _ . -, "
		                 "not starting with '.'",
		                 cfg->name, REGISTRY_NAME_MAX);
	return 0;
}

static struct cove_sandbox *sandbox_new(bool detached)
{
	struct cove_sandbox *sb = calloc(1, sizeof(*sb));
	if (sb) {
		sb->pidfd = -1;
		sb->detached = detached;
	}
	return sb;
}

/* Sets the runtime directory and the socket paths inside it. */
static void sandbox_paths(struct cove_sandbox *sb, const char *base, const char *name)
{
	snprintf(sb->dir, sizeof(sb->dir), "%s/%s", base, name);
	snprintf(sb->name, sizeof(sb->name), "%s", name);
	snprintf(sb->vsock, sizeof(sb->vsock), "%s/vsock", sb->dir);
	snprintf(sb->api, sizeof(sb->api), "%s/%s", sb->dir, SANDBOX_API_SOCK);
}

/* Creates the registry entry: <base>/<name> (mkdir takes the name) or an
 * anonymous <base>/sb-XXXXXX. */
static int sandbox_create(struct cove_sandbox *sb, const char *name, char *err, size_t errlen)
{
	char base[PATH_MAX - 64];
	int r = registry_base(base, sizeof(base));
	if (r == -ENAMETOOLONG)
		return cove_fail(err, errlen, r,
		                 "the runtime directory %s is too long for the sockets in it "
		                 "(set COVE_RUNTIME_DIR to a shorter path)",
		                 base);
	if (r < 0)
		return cove_fail(err, errlen, r, "cannot create the runtime directory %s: %s", base,
		                 strerror(-r));
	if (name) {
		sandbox_paths(sb, base, name);
		if (mkdir(sb->dir, 0700) == 0)
			return 0;
		int e = errno;
		sb->dir[0] = 0; /* not ours: never removed by this handle */
		if (e == EEXIST)
			return cove_fail(err, errlen, -EEXIST, "sandbox %s already exists", name);
		return cove_fail(err, errlen, -e, "cannot create %s/%s: %s", base, name,
		                 strerror(e));
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/sb-XXXXXX", base);
	if (!mkdtemp(dir))
		return cove_fail(err, errlen, -errno, "cannot create a sandbox directory in %s: %s",
		                 base, strerror(errno));
	sandbox_paths(sb, base, strrchr(dir, '/') + 1);
	return 0;
}

/* meta.json while we set the sandbox up: it names us, so nobody takes the
 * entry for dead; m holds what the caller filled in (cpus, image...). */
static int meta_begin(struct cove_sandbox *sb, struct registry_meta *m, char *err, size_t errlen)
{
	snprintf(m->name, sizeof(m->name), "%s", sb->name);
	m->pid = getpid();
	m->starting = true;
	m->created = (int64_t)time(NULL);
	int r = registry_proc_start(m->pid, &m->pid_start);
	if (r == 0)
		r = registry_meta_write(sb->dir, m);
	if (r < 0)
		return cove_fail(err, errlen, r, "cannot write %s/%s: %s", sb->dir, REGISTRY_META,
		                 strerror(-r));
	return 0;
}

/* meta.json once cove-vmm runs: from now on the entry lives with it. */
static int meta_vmm(struct cove_sandbox *sb, struct registry_meta *m, char *err, size_t errlen)
{
	m->pid = sb->pid;
	m->starting = false;
	/* A VMM that died already keeps start 0: the entry reads as dead. */
	if (registry_proc_start(sb->pid, &m->pid_start) < 0)
		m->pid_start = 0;
	int r = registry_meta_write(sb->dir, m);
	if (r < 0)
		return cove_fail(err, errlen, r, "cannot write %s/%s: %s", sb->dir, REGISTRY_META,
		                 strerror(-r));
	return 0;
}

/* Waits for the agent's ready connection, or cove-vmm's death. */
static int wait_ready(struct cove_sandbox *sb, int lfd, const struct cove_config *cfg,
                      const char *console, const char *log, char *err, size_t errlen)
{
	unsigned int timeout = cfg->boot_timeout_ms ? cfg->boot_timeout_ms : 60000;
	int64_t deadline = now_ms() + timeout;
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return cove_fail(err, errlen, -ETIMEDOUT,
			                 "the guest agent did not start within %u ms (console: %s)",
			                 timeout, console);
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
			               { .fd = sb->pidfd, .events = POLLIN } };
		if (poll(p, 2, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			return cove_fail(err, errlen, -errno, "poll: %s", strerror(errno));
		}
		if (p[1].revents)
			return vmm_died(log, console, "before the agent started", err, errlen);
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

static int spawn_vmm(char *const argv[], bool detached, const char *log, struct cove_sandbox *sb,
                     char *err, size_t errlen)
{
	int r = detached ? spawn_detached(argv, log, sb) : spawn_child(argv, log, sb);
	if (r < 0)
		return cove_fail(err, errlen, r, "cannot start cove-vmm: %s", strerror(-r));
	return 0;
}

/* Stops and frees a sandbox that failed to come up, detached or not. */
static void sandbox_abort(struct cove_sandbox *sb)
{
	if (!sb)
		return;
	cove_stop(sb);
	free(sb);
}

int cove_start(const struct cove_config *cfg, struct cove_sandbox **out, char *err, size_t errlen)
{
	*out = NULL;
	int r = check_inputs(cfg, true, err, errlen);
	if (r < 0)
		return r;
	struct cove_sandbox *sb = sandbox_new(cfg->detached);
	struct registry_meta *m = calloc(1, sizeof(*m));
	int lfd = -1;
	char disk[PATH_MAX], ready[PATH_MAX], console[PATH_MAX], log[PATH_MAX];
	char disk_arg[PATH_MAX + 48], cpus[16], mem[32], cmdline[1024];
	if (!sb || !m) {
		r = cove_fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	/* The overlay names its base by absolute path: it is opened by the VMM,
	 * whose working directory is not ours to assume. */
	if (!realpath(cfg->image, m->image)) {
		r = cove_fail(err, errlen, -errno, "image '%s': %s", cfg->image, strerror(errno));
		goto fail;
	}
	m->cpus = cfg->cpus ? cfg->cpus : 1;
	m->memory_mib = cfg->memory_mib ? cfg->memory_mib : 256;
	if ((r = sandbox_create(sb, cfg->name, err, errlen)) < 0 ||
	    (r = meta_begin(sb, m, err, errlen)) < 0)
		goto fail;
	snprintf(disk, sizeof(disk), "%s/disk0.qcow2", sb->dir);
	snprintf(ready, sizeof(ready), "%s_%u", sb->vsock, PROTO_READY_PORT);
	snprintf(log, sizeof(log), "%s/vmm.log", sb->dir);
	if (cfg->console_log)
		snprintf(console, sizeof(console), "%s", cfg->console_log);
	else
		snprintf(console, sizeof(console), "%s/console.log", sb->dir);
	if ((r = qcow2_create_overlay(disk, m->image, 0, err, errlen)) < 0)
		goto fail;
	lfd = listen_unix(ready);
	if (lfd < 0) {
		r = cove_fail(err, errlen, lfd, "cannot listen on %s: %s", ready, strerror(-lfd));
		goto fail;
	}
	snprintf(cpus, sizeof(cpus), "%u", m->cpus);
	snprintf(mem, sizeof(mem), "%llu", (unsigned long long)m->memory_mib);
	snprintf(disk_arg, sizeof(disk_arg), "%s,id=cove-root,format=qcow2", disk);
	snprintf(cmdline, sizeof(cmdline), "quiet cove.hostname=%s%s%s",
	         cfg->hostname ? cfg->hostname : "cove", cfg->cmdline ? " " : "",
	         cfg->cmdline ? cfg->cmdline : "");
	const char *argv[] = { cfg->vmm,    "--kernel", cfg->kernel, "--disk",    disk_arg,
		               "--vsock",   sb->vsock,  "--api",     sb->api,     "--cpus",
		               cpus,        "--memory", mem,         "--console", console,
		               "--cmdline", cmdline,    NULL };
	if ((r = spawn_vmm((char *const *)argv, cfg->detached, log, sb, err, errlen)) < 0 ||
	    (r = meta_vmm(sb, m, err, errlen)) < 0 ||
	    (r = wait_ready(sb, lfd, cfg, console, log, err, errlen)) < 0)
		goto fail;
	close(lfd);
	unlink(ready);
	free(m);
	*out = sb;
	return 0;
fail:
	if (lfd >= 0)
		close(lfd);
	free(m);
	sandbox_abort(sb);
	return r;
}

/* After a restore there is no HELLO: the agent was already serving when
 * the snapshot was taken.  Poll for its answer, 1 ms apart, while watching
 * the VMM; returns the open connection (the restore notice goes on it). */
static int wait_agent(struct cove_sandbox *sb, unsigned int timeout_ms, const char *console,
                      const char *log, char *err, size_t errlen)
{
	int64_t deadline = now_ms() + timeout_ms;
	for (;;) {
		int fd = cove_agent_connect(sb, err, errlen);
		if (fd >= 0)
			return fd;
		if (fd != -ENOENT && fd != -ECONNREFUSED)
			return fd;
		struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
		int n = poll(&p, 1, 1);
		if (n < 0 && errno != EINTR)
			return cove_fail(err, errlen, -errno, "poll: %s", strerror(errno));
		if (n > 0)
			return vmm_died(log, console, "during the restore", err, errlen);
		if (now_ms() >= deadline)
			return cove_fail(err, errlen, -ETIMEDOUT,
			                 "the restored agent did not answer within %u ms "
			                 "(console: %s)",
			                 timeout_ms, console);
	}
}

int cove_restore(const struct cove_config *cfg, const char *snapshot_dir, struct cove_sandbox **out,
                 char *err, size_t errlen)
{
	*out = NULL;
	int r = check_inputs(cfg, false, err, errlen);
	if (r < 0)
		return r;
	struct cove_sandbox *sb = sandbox_new(cfg->detached);
	struct registry_meta *m = calloc(1, sizeof(*m));
	char console[PATH_MAX], log[PATH_MAX], hostname[REGISTRY_NAME_MAX + 1];
	struct stat st;
	if (!sb || !m) {
		r = cove_fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	if (!realpath(snapshot_dir, m->restored_from) || stat(m->restored_from, &st) < 0) {
		r = cove_fail(err, errlen, -errno, "snapshot '%s': %s", snapshot_dir,
		              strerror(errno));
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		r = cove_fail(err, errlen, -ENOTDIR, "snapshot '%s' is not a directory",
		              snapshot_dir);
		goto fail;
	}
	snapshot_note_read(m->restored_from, &m->cpus, &m->memory_mib);
	if ((r = sandbox_create(sb, cfg->name, err, errlen)) < 0 ||
	    (r = meta_begin(sb, m, err, errlen)) < 0)
		goto fail;
	snprintf(log, sizeof(log), "%s/vmm.log", sb->dir);
	if (cfg->console_log)
		snprintf(console, sizeof(console), "%s", cfg->console_log);
	else
		snprintf(console, sizeof(console), "%s/console.log", sb->dir);
	const char *argv[] = { cfg->vmm, "--restore", m->restored_from, "--overlay-dir",
		               sb->dir,  "--vsock",   sb->vsock,        "--api",
		               sb->api,  "--console", console,          NULL };
	int afd = -1;
	if ((r = spawn_vmm((char *const *)argv, cfg->detached, log, sb, err, errlen)) < 0 ||
	    (r = meta_vmm(sb, m, err, errlen)) < 0 ||
	    (r = afd = wait_agent(sb, cfg->boot_timeout_ms ? cfg->boot_timeout_ms : 60000, console,
	                          log, err, errlen)) < 0)
		goto fail;
	/* A host name may not hold '_', which sandbox names may. */
	snprintf(hostname, sizeof(hostname), "%s", sb->name);
	for (char *c = hostname; *c; c++)
		if (*c == '_')
			*c = '-';
	/* The guest resets the connections it had at the snapshot when it
	 * handles the vsock transport-reset event; a connection made just
	 * before that can be caught in it.  The notice is idempotent: retry
	 * it on a fresh connection. */
	for (int tries = 0;; tries++) {
		r = cove_agent_restored_on(sb, afd, cfg->hostname ? cfg->hostname : hostname,
		                           sb->name, err, errlen);
		close(afd);
		if (r != -ECONNRESET && r != -EPIPE)
			break;
		if (tries == 5)
			break;
		afd = wait_agent(sb, cfg->boot_timeout_ms ? cfg->boot_timeout_ms : 60000, console,
		                 log, err, errlen);
		if (afd < 0) {
			r = afd;
			break;
		}
	}
	if (r < 0)
		goto fail;
	free(m);
	*out = sb;
	return 0;
fail:
	free(m);
	sandbox_abort(sb);
	return r;
}

int cove_open(const char *name, struct cove_sandbox **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!registry_name_valid(name))
		return cove_fail(err, errlen, -EINVAL,
		                 "invalid sandbox name '%s': 1 to %d of A-Z a-z 0-9 _ . -, "
		                 "not starting with '.'",
		                 name ? name : "", REGISTRY_NAME_MAX);
	char base[PATH_MAX];
	int r = registry_base(base, sizeof(base));
	if (r < 0)
		return cove_fail(err, errlen, r, "runtime directory %s: %s", base, strerror(-r));
	struct cove_sandbox *sb = sandbox_new(true);
	struct registry_meta *m = malloc(sizeof(*m));
	if (!sb || !m) {
		r = cove_fail(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	sandbox_paths(sb, base, name);
	r = registry_meta_read(sb->dir, m);
	if (r == -ENOENT && access(sb->dir, F_OK) < 0) {
		r = cove_fail(err, errlen, -ENOENT, "no sandbox named %s", name);
		goto fail;
	}
	if (r == -ENOENT || (r == 0 && m->starting && registry_alive(m))) {
		r = cove_fail(err, errlen, -EAGAIN, "sandbox %s is still starting", name);
		goto fail;
	}
	if (r < 0) {
		r = cove_fail(err, errlen, r, "sandbox %s: unreadable %s/%s", name, sb->dir,
		              REGISTRY_META);
		goto fail;
	}
	/* Open the pidfd, then check the start time again: a pid reused
	 * between the two would otherwise pass. */
	if (!m->starting && registry_alive(m)) {
		sb->pidfd = (int)syscall(SYS_pidfd_open, m->pid, 0);
		if (sb->pidfd >= 0 && registry_alive(m)) {
			sb->pid = m->pid;
			free(m);
			*out = sb;
			return 0;
		}
	}
	registry_remove_dead(base, name, m);
	r = cove_fail(err, errlen, -ESRCH,
	              "sandbox %s was dead (its process %d is gone); removed its entry", name,
	              (int)m->pid);
fail:
	if (sb) {
		sb->dir[0] = 0; /* never remove what we only looked at */
		if (sb->pidfd >= 0)
			close(sb->pidfd);
	}
	free(sb);
	free(m);
	return r;
}

/* Waits up to ms for cove-vmm to exit; true when it did (and, when it is
 * our child, is reaped). */
static bool wait_exit(struct cove_sandbox *sb, int ms)
{
	struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
	int64_t deadline = now_ms() + ms;
	for (;;) {
		int64_t left = deadline - now_ms();
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

/* Whether the runtime directory still belongs to this sandbox: after its
 * VMM died, another process may have cleaned it and a new sandbox taken
 * the name. */
static bool dir_still_ours(const struct cove_sandbox *sb)
{
	struct registry_meta *m = malloc(sizeof(*m));
	bool ours = !m || registry_meta_read(sb->dir, m) < 0 || m->pid == sb->pid;
	free(m);
	return ours;
}

void sandbox_finish(struct cove_sandbox *sb, int grace_ms)
{
	if (sb->pidfd >= 0) {
		if (!wait_exit(sb, grace_ms)) {
			signal_vmm(sb, SIGTERM);
			if (!wait_exit(sb, 3000)) {
				signal_vmm(sb, SIGKILL);
				wait_exit(sb, 60000);
			}
		}
		close(sb->pidfd);
		sb->pidfd = -1;
	}
	sb->stopped = true;
	if (sb->dir[0] && !getenv("COVE_KEEP_SANDBOX") && dir_still_ours(sb))
		registry_remove_tree(sb->dir);
}

int cove_stop(struct cove_sandbox *sb)
{
	if (!sb || sb->stopped)
		return 0;
	int fd = -1;
	struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
	if (sb->pidfd >= 0 && poll(&p, 1, 0) == 0) {
		char err[128];
		fd = cove_agent_connect(sb, err, sizeof(err));
		if (fd >= 0) {
			if (proto_send(fd, PROTO_SHUTDOWN, 0, "{}", 2) == 0)
				(void)cove_expect(fd, PROTO_OK, NULL, NULL, err, sizeof(err));
			close(fd);
		}
	}
	sandbox_finish(sb, fd >= 0 ? STOP_GRACE_MS : 0);
	return 0;
}

void cove_free(struct cove_sandbox *sb)
{
	if (!sb)
		return;
	if (!sb->detached)
		cove_stop(sb);
	else if (sb->pidfd >= 0)
		close(sb->pidfd);
	free(sb);
}
