/* A running sandbox's CPU, memory and disk, from its cgroup, its VMM's
 * /proc entry and its root overlay. */
#include "lib/usage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "lib/base/cgroup.h"
#include "lib/base/handle.h"
#include "lib/net/net_addr.h"
#include "qcow2_create.h"

int cove_proc_usage_parse(const char *stat, const char *status, long ticks_per_s,
                          uint64_t *cpu_usec, uint64_t *rss_bytes)
{
	/* stat: "pid (comm) state ..." where comm may hold spaces and ')':
	 * the fields start after the last ')'. utime, stime are fields 14, 15. */
	const char *p = strrchr(stat, ')');
	unsigned long long ut, st;
	if (!p || ticks_per_s <= 0 ||
	    sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -EINVAL;
	*cpu_usec = (uint64_t)(ut + st) * (1000000ull / (uint64_t)ticks_per_s);
	const char *r = strstr(status, "\nVmRSS:");
	unsigned long long kb;
	if (!r || sscanf(r + 7, " %llu kB", &kb) != 1)
		return -EINVAL;
	*rss_bytes = (uint64_t)kb * 1024;
	return 0;
}

static ssize_t read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	return n;
}

static int vmm_usage(struct cove_sandbox *sb, struct cove_usage *u, char *err, size_t errlen)
{
	char path[64], stat[1024], status[4096];
	pid_t pid = cove_vmm_pid(sb);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (pid <= 0 || read_text(path, stat, sizeof(stat)) < 0)
		return errf(err, errlen, -ESRCH, "the sandbox's VMM is gone");
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_text(path, status, sizeof(status)) < 0 ||
	    cove_proc_usage_parse(stat, status, sysconf(_SC_CLK_TCK), &u->cpu_usec, &u->mem_bytes) <
	        0)
		return errf(err, errlen, -ESRCH, "the sandbox's VMM is gone");
	return 0;
}

/* The overlay's allocated bytes and the virtual size its qcow2 header
 * gives. */
static void disk_usage(struct cove_sandbox *sb, struct cove_usage *u)
{
	char path[sizeof(sb->root) + 16];
	snprintf(path, sizeof(path), "%s/disk0.qcow2", sb->root);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	uint8_t hdr[32];
	if (fstat(fd, &st) == 0)
		u->disk_used = (uint64_t)st.st_blocks * 512;
	if (pread(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) &&
	    qcow2_be32(hdr) == QCOW2_MAGIC)
		u->disk_total = qcow2_be64(hdr + 24);
	close(fd);
}

/* The sandbox's host link (cv<K>): what it sent is the link's rx, what it
 * got its tx; both through cove-egress's proxy too, which is in its
 * namespace. */
static void net_usage(struct cove_sandbox *sb, struct cove_usage *u)
{
	static const char *const dir[2] = { "rx", "tx" };
	uint64_t *out[2] = { &u->net_rx, &u->net_tx };
	if (!sb->net.on)
		return;
	for (int i = 0; i < 2; i++) {
		char path[96];
		snprintf(path, sizeof(path),
		         "/sys/class/net/" NET_HOST_LINK "%u/statistics/%s_bytes", sb->net.index,
		         dir[i]);
		if (kfile_u64(path, out[i]) < 0)
			*out[i] = 0;
	}
}

int cove_usage(struct cove_sandbox *sb, struct cove_usage *u, char *err, size_t errlen)
{
	*u = (struct cove_usage){ 0 };
	int r = vmm_usage(sb, u, err, errlen);
	if (r < 0)
		return r;
	/* The cgroup's CPU counter is finer than /proc's clock ticks and
	 * counts every process of the sandbox. */
	struct cgroup_usage cg;
	if (cgroup_usage_named(sb->name, &cg) == 0) {
		u->cpu_usec = cg.cpu_usec;
		u->mem_cache = cg.file_bytes;
	}
	disk_usage(sb, u);
	net_usage(sb, u);
	return 0;
}
