/* Finding the sandboxes that any process of this user started, through
 * the registry: cove_open attaches to one by name, cove_list lists them
 * all.  Both tell a live entry from one whose cove-vmm died, and remove
 * the dead. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/lookup.h"

#include "errf.h"
#include "lib/base/handle.h"
#include "lib/base/registry.h"
#include "lib/base/sandbox_net.h"
#include "lib/net/net.h"
#include "lib/vmm/vmm_api.h"

/* out = a/b; false when it does not fit. */
static bool join(char *out, size_t len, const char *a, const char *b)
{
	int n = snprintf(out, len, "%s/%s", a, b);
	return n >= 0 && (size_t)n < len;
}

/* The network of a sandbox that cove_open attaches to: its index and
 * claim, and cove-egress through a pidfd once its identity (comm, start
 * time) is checked, so that cove_stop never signals another process. */
static void open_net(struct cove_sandbox *sb, const char *base, const struct registry_meta *m)
{
	struct sandbox_net *n = &sb->net;
	if (!m->net.on)
		return;
	n->on = true;
	n->index = m->net.index;
	snprintf(n->claim, sizeof(n->claim), "%.4000s/.net/%u", base, m->net.index);
	snprintf(n->limits, sizeof(n->limits), "%s", m->net.limits);
	pid_t pid = m->net.egress_pid;
	if (pid <= 0 || registry_proc_is_egress(pid, m->net.egress_start) < 0)
		return;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd >= 0 && registry_proc_is_egress(pid, m->net.egress_start) == 0) {
		n->egress_pid = pid;
		n->egress_start = m->net.egress_start;
		n->egress_pidfd = fd;
	} else if (fd >= 0) {
		close(fd);
	}
}

int cove_open(const char *name, struct cove_sandbox **out, char *err, size_t errlen)
{
	*out = NULL;
	int r = sandbox_check_name(name, err, errlen);
	if (r < 0)
		return r;
	char base[PATH_MAX];
	r = registry_base(base, sizeof(base), err, errlen);
	if (r < 0)
		return r;
	struct cove_sandbox *sb = sandbox_new(true);
	struct registry_meta *m = malloc(sizeof(*m));
	if (!sb || !m) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	sandbox_paths(sb, base, name);
	r = registry_meta_read(sb->dir, m);
	if (r == -ENOENT && access(sb->dir, F_OK) < 0) {
		r = errf(err, errlen, -ENOENT, "no sandbox named %s", name);
		goto fail;
	}
	if (r == -ENOENT || (r == 0 && m->starting && registry_alive(m))) {
		r = errf(err, errlen, -EAGAIN, "sandbox %s is still starting", name);
		goto fail;
	}
	if (r < 0) {
		r = errf(err, errlen, r, "sandbox %s: unreadable %s/%s", name, sb->dir,
		         REGISTRY_META);
		goto fail;
	}
	/* Open the pidfd, then check the start time again: a pid reused
	 * between the two would otherwise pass. */
	if (!m->starting && registry_alive(m)) {
		sb->pidfd = (int)syscall(SYS_pidfd_open, m->pid, 0);
		/* Through the pidfd the process cannot change under us: check that
		 * it is a cove-vmm of ours before anything may signal it. */
		if (sb->pidfd >= 0 && registry_alive(m) && registry_proc_is_vmm(m->pid) == -EPERM) {
			r = errf(err, errlen, -EPERM,
			         "sandbox %s: its recorded process %d is not a cove-vmm of yours; "
			         "left alone (remove %s if the entry is stale)",
			         name, (int)m->pid, sb->dir);
			goto fail;
		}
		if (sb->pidfd >= 0 && registry_alive(m)) {
			sb->pid = m->pid;
			open_net(sb, base, m);
			free(m);
			*out = sb;
			return 0;
		}
	}
	if (registry_remove_dead(base, name, m) == 0)
		net_clean_dead(base, m);
	r = errf(err, errlen, -ESRCH,
	         "sandbox %s was dead (its process %d is gone); removed its entry", name,
	         (int)m->pid);
fail:
	if (sb) {
		sb->dir[0] = 0; /* never remove what we only looked at */
		if (sb->pidfd >= 0)
			close(sb->pidfd);
		if (sb->net.egress_pidfd >= 0)
			close(sb->net.egress_pidfd);
	}
	free(sb);
	free(m);
	return r;
}

/* ---- cove_list ---------------------------------------------------------- */

const char *cove_state_name(enum cove_state state)
{
	switch (state) {
	case COVE_STATE_STARTING:
		return "starting";
	case COVE_STATE_RUNNING:
		return "running";
	case COVE_STATE_PAUSED:
		return "paused";
	case COVE_STATE_DEAD:
		return "dead";
	}
	return "unknown";
}

/* Fills info from the entry <base>/<name>; removes it when it is dead.
 * Returns 1 when info should be listed, 0 when not, or -errno. */
static int list_entry(const char *base, const char *name, struct registry_meta *m,
                      struct cove_info *info)
{
	char dir[PATH_MAX];
	memset(info, 0, sizeof(*info));
	if (!join(dir, sizeof(dir), base, name) || strlen(name) >= sizeof(info->name))
		return 0;
	memcpy(info->name, name, strlen(name) + 1);
	int r = registry_meta_read(dir, m);
	if (r < 0) {
		struct stat st;
		if (stat(dir, &st) < 0)
			return 0; /* removed under us */
		if (time(NULL) - st.st_ctime < REGISTRY_CREATE_GRACE_S) {
			info->state = COVE_STATE_STARTING;
			return 1;
		}
		info->state = COVE_STATE_DEAD;
		r = registry_remove_dead(base, name, NULL);
		return r == -EBUSY ? 0 : 1;
	}
	info->pid = m->pid;
	info->cpus = m->cpus;
	info->memory_mib = m->memory_mib;
	info->created = m->created;
	info->cpu_quota = m->limits.cpu_quota;
	info->pids_max = m->limits.pids_max;
	info->disk_size = m->limits.disk_size;
	info->disk_bps = m->limits.disk_bps;
	info->disk_iops = m->limits.disk_iops;
	info->ttl_s = m->limits.ttl_s;
	info->net_index = m->net.index;
	if (m->net.on && !(info->net_policy = strdup(m->net.policy)))
		return -ENOMEM;
	if ((m->image[0] && !(info->image = strdup(m->image))) ||
	    (m->restored_from[0] && !(info->restored_from = strdup(m->restored_from))))
		return -ENOMEM;
	if (!registry_alive(m)) {
		info->state = COVE_STATE_DEAD;
		r = registry_remove_dead(base, name, m);
		if (r == 0)
			net_clean_dead(base, m);
		return r == -EBUSY ? 0 : 1;
	}
	if (m->starting) {
		info->state = COVE_STATE_STARTING;
		return 1;
	}
	char api[PATH_MAX];
	bool paused = false;
	info->state = join(api, sizeof(api), dir, SANDBOX_API_SOCK) &&
	                      vmm_api_paused(api, &paused) == 0 && paused
	                  ? COVE_STATE_PAUSED
	                  : COVE_STATE_RUNNING;
	return 1;
}

static int info_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cove_info *)a)->name, ((const struct cove_info *)b)->name);
}

int cove_list(struct cove_info **out, size_t *count, char *err, size_t errlen)
{
	*out = NULL;
	*count = 0;
	char base[PATH_MAX];
	int r = registry_base(base, sizeof(base), err, errlen);
	if (r < 0)
		return r;
	DIR *d = opendir(base);
	if (!d)
		return errf(err, errlen, -errno, "cannot read %s: %s", base, strerror(errno));
	struct registry_meta *m = malloc(sizeof(*m));
	struct cove_info *list = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	r = m ? 0 : -ENOMEM;
	while (r == 0 && (e = readdir(d))) {
		if (!registry_name_valid(e->d_name))
			continue; /* ".", "..", entries being removed */
		struct stat st;
		if (e->d_type != DT_DIR &&
		    (e->d_type != DT_UNKNOWN ||
		     fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		     !S_ISDIR(st.st_mode)))
			continue; /* a stray file */
		if (n == cap) {
			size_t c = cap ? cap * 2 : 16;
			struct cove_info *l = realloc(list, c * sizeof(*l));
			if (!l) {
				r = -ENOMEM;
				break;
			}
			list = l;
			cap = c;
		}
		int k = list_entry(base, e->d_name, m, &list[n]);
		if (k < 0) {
			free(list[n].image);
			free(list[n].restored_from);
			free(list[n].net_policy);
			r = k;
		} else if (k > 0) {
			n++;
		} else {
			free(list[n].image);
			free(list[n].restored_from);
			free(list[n].net_policy);
		}
	}
	closedir(d);
	free(m);
	if (r < 0) {
		cove_list_free(list, n);
		return errf(err, errlen, r, "listing %s: %s", base, strerror(-r));
	}
	if (n)
		qsort(list, n, sizeof(*list), info_cmp);
	*out = list;
	*count = n;
	return 0;
}

void cove_list_free(struct cove_info *list, size_t count)
{
	for (size_t i = 0; list && i < count; i++) {
		free(list[i].image);
		free(list[i].restored_from);
		free(list[i].net_policy);
	}
	free(list);
}
