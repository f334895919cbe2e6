/* The host-enforced limits of a sandbox as libcove carries them to
 * cove-vmm: the root disk's size and its --disk options (rate limits and
 * the overlay file's cap), and the --ttl, which cove-vmm enforces and a
 * watchdog thread here backs up for a cove-vmm that cannot (SIGSTOPped).
 * The cgroup limits (cpu_quota, pids_max, memory) are cgroup.c's. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errf.h"
#include "lib/base/cove_types.h"
#include "lib/base/handle.h"
#include "lib/vmm/limits.h"
#include "lib/vmm/vmm_proc.h"
#include "qcow2_create.h"

int sandbox_disk_size(const struct cove_config *cfg, const char *image, uint64_t *size, char *err,
                      size_t errlen)
{
	uint64_t have = 0;
	char msg[256];
	int r = qcow2_probe(image, NULL, &have, msg, sizeof(msg));
	if (r < 0)
		return errf(err, errlen, r, "image '%s': %s", image, msg);
	if (cfg->disk_size && cfg->disk_size < have)
		return errf(err, errlen, -EINVAL,
		            "disk size %llu bytes is smaller than the image '%s' (%llu bytes)",
		            (unsigned long long)cfg->disk_size, image, (unsigned long long)have);
	*size = cfg->disk_size ? cfg->disk_size : have;
	return 0;
}

void sandbox_disk_limits(char *out, size_t len, uint64_t size, uint64_t bps, uint64_t iops)
{
	int n =
	    snprintf(out, len, ",max_file=%llu", (unsigned long long)qcow2_overlay_max_file(size));
	if (bps && n >= 0 && (size_t)n < len)
		n += snprintf(out + n, len - (size_t)n, ",bps=%llu", (unsigned long long)bps);
	if (iops && n >= 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, ",iops=%llu", (unsigned long long)iops);
}

struct watch {
	int pidfd, stop_fd;
	int64_t ms;
	bool *killed;
};

static void *watchdog(void *arg)
{
	struct watch *w = arg;
	struct pollfd p[2] = { { .fd = w->pidfd, .events = POLLIN },
		               { .fd = w->stop_fd, .events = POLLIN } };
	int n;
	/* A long ttl is waited in slices: poll takes an int of ms. */
	for (int64_t left = w->ms; left > 0; left -= INT32_MAX / 2) {
		do
			n = poll(p, 2, (int)(left < INT32_MAX / 2 ? left : INT32_MAX / 2));
		while (n < 0 && errno == EINTR);
		if (n != 0)
			break;
	}
	if (n == 0) {
		/* Still running past its deadline: stopped or wedged.  Through
		 * the pidfd, never a process that reused the pid. */
		__atomic_store_n(w->killed, true, __ATOMIC_RELEASE);
		(void)syscall(SYS_pidfd_send_signal, w->pidfd, SIGKILL, NULL, 0);
	}
	close(w->pidfd);
	free(w);
	return NULL;
}

void ttl_watch(struct cove_sandbox *sb, uint64_t ttl_s)
{
	sb->ttl_s = ttl_s;
	if (!ttl_s || sb->detached || sb->pidfd < 0 || sb->ttl_stop_fd >= 0)
		return;
	struct watch *w = malloc(sizeof(*w));
	if (!w)
		return;
	w->ms = (int64_t)ttl_s * 1000 + TTL_GRACE_MS;
	w->killed = &sb->ttl_killed;
	/* The thread's own copy: cove_stop may close sb->pidfd meanwhile. */
	w->pidfd = fcntl(sb->pidfd, F_DUPFD_CLOEXEC, 0);
	w->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (w->pidfd < 0 || w->stop_fd < 0 ||
	    pthread_create(&sb->ttl_thread, NULL, watchdog, w) != 0) {
		if (w->pidfd >= 0)
			close(w->pidfd);
		if (w->stop_fd >= 0)
			close(w->stop_fd);
		free(w);
		return;
	}
	sb->ttl_stop_fd = w->stop_fd;
}

void ttl_unwatch(struct cove_sandbox *sb)
{
	if (sb->ttl_stop_fd < 0)
		return;
	uint64_t one = 1;
	(void)!write(sb->ttl_stop_fd, &one, sizeof(one));
	pthread_join(sb->ttl_thread, NULL);
	close(sb->ttl_stop_fd);
	sb->ttl_stop_fd = -1;
}

#define VMM_EXIT_DEADLINE 6 /* cove-vmm's exit status at its --ttl (vmm/main.c) */

bool cove_sandbox_exited(struct cove_sandbox *sb, int wait_ms, char *why, size_t len)
{
	if (why && len)
		why[0] = 0;
	if (sb->pidfd < 0)
		return sb->stopped;
	struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
	int n;
	do
		n = poll(&p, 1, wait_ms > 0 ? wait_ms : 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return false;
	if (!why || !len)
		return true;
	/* WNOWAIT: the status is peeked, cove_stop still reaps the child. */
	siginfo_t si = { 0 };
	bool have = sb->child &&
	            waitid(P_PIDFD, (id_t)sb->pidfd, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	            si.si_pid != 0;
	bool killed = __atomic_load_n(&sb->ttl_killed, __ATOMIC_ACQUIRE);
	char log[PATH_MAX + 16], tail[384];
	snprintf(log, sizeof(log), "%s/vmm.log", sb->dir);
	vmm_log_tail(log, tail, sizeof(tail));
	if (killed)
		snprintf(why, len,
		         "the sandbox reached its --ttl of %llu s (cove-vmm did not stop by itself "
		         "and was killed)",
		         (unsigned long long)sb->ttl_s);
	else if ((have && si.si_code == CLD_EXITED && si.si_status == VMM_EXIT_DEADLINE) ||
	         (!have && sb->ttl_s && strstr(tail, "reached its --ttl")))
		snprintf(why, len, "the sandbox reached its --ttl of %llu s",
		         (unsigned long long)sb->ttl_s);
	else if (have && si.si_code == CLD_EXITED)
		snprintf(why, len, "cove-vmm exited with status %d: %s", si.si_status,
		         tail[0] ? tail : "(no output)");
	else if (have)
		snprintf(why, len, "cove-vmm was killed by signal %d%s%s", si.si_status,
		         tail[0] ? ": " : "", tail);
	else
		snprintf(why, len, "cove-vmm exited: %s", tail[0] ? tail : "(no output)");
	return true;
}
