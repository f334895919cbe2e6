/* PID 1 duties that happen once, at start: file systems, host name, lo. */
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <sys/io.h>
#endif

#include "boot_timer_abi.h"
#include "grow.h"
#include "net.h"

#define CMDLINE_MAX  4096
#define HOSTNAME_MAX 64
/* The agent's run directory (AGENT_RUN_DIR in restore.h, which sits above
 * this file) and the tmpfs file bound over /etc/hostname in it. */
#define RUN_DIR       "/run/cove"
#define HOSTNAME_FILE RUN_DIR "/hostname"

void agent_boot_poke(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (ioperm(BOOT_TIMER_PORT, 1, 1) == 0)
		outb(BOOT_TIMER_MAGIC, BOOT_TIMER_PORT);
#endif
}

int agent_cmdline_get(const char *cmdline, const char *key, char *out, size_t outlen)
{
	size_t klen = strlen(key);
	int r = -ENOENT;
	const char *p = cmdline;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		/* One word; double quotes may hide blanks inside it. */
		const char *w = p;
		bool quoted = false;
		for (; *p && (quoted || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
			if (*p == '"')
				quoted = !quoted;
		}
		if ((size_t)(p - w) <= klen || strncmp(w, key, klen) != 0 || w[klen] != '=')
			continue;
		const char *v = w + klen + 1;
		size_t vlen = (size_t)(p - v);
		if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
			v++;
			vlen -= 2;
		}
		if (vlen >= outlen) {
			r = -ENAMETOOLONG;
			continue;
		}
		memcpy(out, v, vlen);
		out[vlen] = 0;
		r = 0;
	}
	return r;
}

bool agent_hostname_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > HOSTNAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))
			return false;
	}
	return true;
}

static void warn(const char *what, const char *arg)
{
	fprintf(stderr, "cove-agent: %s %s: %s\n", what, arg, strerror(errno));
}

/* True when path is the root of a mount (so something is mounted there). */
static bool is_mountpoint(const char *path)
{
	struct statx sx;
	if (statx(AT_FDCWD, path, AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx) == 0 &&
	    (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return sx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
	/* Before Linux 5.8: a mount root sits on another device than its parent. */
	char parent[256];
	struct stat a, b;
	snprintf(parent, sizeof(parent), "%s/..", path);
	return stat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

struct mount_spec {
	const char *target, *type, *data;
	unsigned long flags;
	mode_t dir_mode;
};

static const struct mount_spec mounts[] = {
	{ "/proc", "proc", NULL, MS_NOSUID | MS_NODEV | MS_NOEXEC, 0555 },
	{ "/sys", "sysfs", NULL, MS_NOSUID | MS_NODEV | MS_NOEXEC, 0555 },
	{ "/dev", "devtmpfs", "mode=0755", MS_NOSUID, 0755 },
	{ "/dev/pts", "devpts", "gid=5,mode=0620,ptmxmode=0666", MS_NOSUID | MS_NOEXEC, 0755 },
	{ "/dev/shm", "tmpfs", "mode=1777", MS_NOSUID | MS_NODEV, 01777 },
	{ "/tmp", "tmpfs", "mode=1777", MS_NOSUID | MS_NODEV, 01777 },
	{ "/run", "tmpfs", "mode=0755", MS_NOSUID | MS_NODEV, 0755 },
	{ "/sys/fs/cgroup", "cgroup2", NULL, MS_NOSUID | MS_NODEV | MS_NOEXEC, 0555 },
};

static void mount_missing(void)
{
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		const struct mount_spec *m = &mounts[i];
		if (mkdir(m->target, m->dir_mode) < 0 && errno != EEXIST) {
			warn("mkdir", m->target);
			continue;
		}
		if (is_mountpoint(m->target))
			continue;
		if (mount(m->type, m->target, m->type, m->flags, m->data) < 0)
			warn("mount", m->target);
	}
}

static void dev_links(void)
{
	static const char *const links[][2] = {
		{ "/dev/ptmx", "pts/ptmx" },          { "/dev/fd", "/proc/self/fd" },
		{ "/dev/stdin", "/proc/self/fd/0" },  { "/dev/stdout", "/proc/self/fd/1" },
		{ "/dev/stderr", "/proc/self/fd/2" },
	};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		struct stat st;
		if (lstat(links[i][0], &st) < 0 && symlink(links[i][1], links[i][0]) < 0)
			warn("symlink", links[i][0]);
	}
}

static void read_cmdline(char *cmdline, size_t len)
{
	cmdline[0] = 0;
	int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, cmdline, len - 1);
		cmdline[n > 0 ? n : 0] = 0;
		close(fd);
	}
}

static void set_hostname(const char *cmdline, bool pid1)
{
	char name[HOSTNAME_MAX + 1];
	if (agent_cmdline_get(cmdline, "cove.hostname", name, sizeof(name)) < 0 ||
	    !agent_hostname_valid(name)) {
		if (!pid1)
			return;
		strcpy(name, AGENT_DEFAULT_HOSTNAME);
	}
	if (sethostname(name, strlen(name)) < 0)
		warn("sethostname", name);
}

/* /etc/hostname as a file of the running system, as container runtimes
 * keep it: a tmpfs file bind-mounted over the image's, holding the name
 * just set.  The restore notice rewrites it for every fork; on the root
 * file system that was a disk read and a dirty block per restore (a
 * qcow2 cluster copied in each fork) and a change in every sandbox's
 * filesystem diff.  Only an existing regular file is covered. */
static void hostname_bind(void)
{
	struct stat st;
	if (lstat("/etc/hostname", &st) < 0 || !S_ISREG(st.st_mode) ||
	    is_mountpoint("/etc/hostname"))
		return;
	char name[HOSTNAME_MAX + 2];
	if (gethostname(name, HOSTNAME_MAX + 1) < 0)
		return;
	name[HOSTNAME_MAX] = 0;
	size_t n = strlen(name);
	name[n++] = '\n';
	if (mkdir(RUN_DIR, 0755) < 0 && errno != EEXIST) {
		warn("mkdir", RUN_DIR);
		return;
	}
	const char *file = HOSTNAME_FILE;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		warn("create", file);
		return;
	}
	bool ok = write(fd, name, n) == (ssize_t)n;
	if (close(fd) < 0 || !ok) {
		warn("write", file);
		return;
	}
	if (mount(file, "/etc/hostname", NULL, MS_BIND, NULL) < 0)
		warn("bind-mount over", "/etc/hostname");
}

static void loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return;
	struct ifreq ifr = { 0 };
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
			warn("bring up", "lo");
	}
	close(s);
}

void agent_sys_setup(bool pid1)
{
	if (pid1)
		umask(022);
	mount_missing();
	if (pid1)
		agent_grow_root();
	dev_links();
	char cmdline[CMDLINE_MAX];
	read_cmdline(cmdline, sizeof(cmdline));
	set_hostname(cmdline, pid1);
	if (pid1)
		hostname_bind();
	loopback_up();
	char net[AGENT_NET_VALUE_MAX];
	if (agent_cmdline_get(cmdline, "cove.net", net, sizeof(net)) == 0)
		agent_net_setup(net);
	setenv("PATH", AGENT_PATH, pid1);
	setenv("HOME", "/root", pid1);
}
