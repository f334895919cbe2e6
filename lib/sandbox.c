/* The sandbox handle and its lifecycle: the registry entry (runtime
 * directory) and its meta.json, the root disk's qcow2 overlay, cove_start
 * up to the agent's readiness, and cove_stop and cove_free.  cove-vmm as a
 * process is vmm_proc.c's; restoring from a snapshot is restore.c's. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cove_limits.h"
#include "errf.h"
#include "lib/agent/agent_client.h"
#include "lib/agent/conn.h"
#include "lib/base/cgroup.h"
#include "lib/base/handle.h"
#include "lib/base/jail.h"
#include "lib/base/registry.h"
#include "lib/base/sandbox_net.h"
#include "lib/base/spawn.h"
#include "lib/config.h"
#include "lib/net/net.h"
#include "lib/net/net_addr.h"
#include "lib/net/net_egress.h"
#include "lib/net/net_pool.h"
#include "lib/proxy.h"
#include "lib/sandbox.h"
#include "lib/vmm/limits.h"
#include "lib/vmm/pool.h"
#include "lib/vmm/pool_member.h"
#include "lib/vmm/vmm_proc.h"
#include "proto.h"
#include "qcow2_create.h"

/* cove stop's budget (worst case STOP_AGENT_MS + STOP_EXIT_MS + VMM_TERM_MS
 * + VMM_KILL_MS = 14 s, lib/vmm/vmm_proc.h). */
#define STOP_AGENT_MS 3000
#define STOP_EXIT_MS  6000

/* The jail's root inside the entry: disks and sockets, all cove-vmm may
 * see once it has pivoted into it. */
static int make_root(struct cove_sandbox *sb, char *err, size_t errlen)
{
	if (mkdir(sb->root, 0700) == 0)
		return 0;
	return errf(err, errlen, -errno, "cannot create %s: %s", sb->root, strerror(errno));
}

int sandbox_create(struct cove_sandbox *sb, const char *name, char *err, size_t errlen)
{
	char base[PATH_MAX - 64];
	int r = registry_base(base, sizeof(base), err, errlen);
	if (r < 0)
		return r;
	if (name) {
		sandbox_paths(sb, base, name);
		if (mkdir(sb->dir, 0700) == 0)
			return make_root(sb, err, errlen);
		int e = errno;
		sb->dir[0] = 0; /* not ours: never removed by this handle */
		if (e == EEXIST)
			return errf(err, errlen, -EEXIST, "sandbox %s already exists", name);
		return errf(err, errlen, -e, "cannot create %s/%s: %s", base, name, strerror(e));
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/sb-XXXXXX", base);
	if (!mkdtemp(dir))
		return errf(err, errlen, -errno, "cannot create a sandbox directory in %s: %s",
		            base, strerror(errno));
	sandbox_paths(sb, base, strrchr(dir, '/') + 1);
	return make_root(sb, err, errlen);
}

int sandbox_meta_begin(struct cove_sandbox *sb, struct registry_meta *m, char *err, size_t errlen)
{
	snprintf(m->name, sizeof(m->name), "%s", sb->name);
	m->pid = getpid();
	m->starting = true;
	m->created = (int64_t)time(NULL);
	int r = registry_proc_start(m->pid, &m->pid_start);
	if (r == 0)
		r = registry_meta_write(sb->dir, m);
	if (r < 0)
		return errf(err, errlen, r, "cannot write %s/%s: %s", sb->dir, REGISTRY_META,
		            strerror(-r));
	return 0;
}

int sandbox_meta_vmm(struct cove_sandbox *sb, struct registry_meta *m, char *err, size_t errlen)
{
	m->pid = sb->pid;
	m->starting = false;
	/* A VMM that died already keeps start 0: the entry reads as dead. */
	if (registry_proc_start(sb->pid, &m->pid_start) < 0)
		m->pid_start = 0;
	int r = registry_meta_write(sb->dir, m);
	if (r < 0)
		return errf(err, errlen, r, "cannot write %s/%s: %s", sb->dir, REGISTRY_META,
		            strerror(-r));
	return 0;
}

void sandbox_logs(const struct cove_sandbox *sb, const struct cove_config *cfg, char *console,
                  char *log)
{
	snprintf(log, PATH_MAX, "%s/vmm.log", sb->dir);
	if (cfg->console_log)
		snprintf(console, PATH_MAX, "%s", cfg->console_log);
	else
		snprintf(console, PATH_MAX, "%s/console.log", sb->dir);
}

void sandbox_abort(struct cove_sandbox *sb)
{
	if (!sb)
		return;
	cove_stop(sb);
	if (sb->notice_pending)
		close(sb->notice_fd);
	free(sb);
}

int cove_start(const struct cove_config *cfg, struct cove_sandbox **out, char *err, size_t errlen)
{
	*out = NULL;
	int r = config_check(cfg, true, err, errlen);
	if (r < 0)
		return r;
	/* The rules and every secret they name, read before anything starts. */
	struct proxy_load pl = { 0 };
	char *ca = NULL;
	if (cfg->proxy_rules && (r = proxy_load_file(cfg->proxy_rules, &pl, err, errlen)) < 0)
		return r;
	struct cove_sandbox *sb = sandbox_new(cfg->detached);
	struct registry_meta *m = calloc(1, sizeof(*m));
	int lfd = -1;
	struct pool_member *pm = NULL;
	char disk[PATH_MAX], ready[PATH_MAX], console[PATH_MAX], log[PATH_MAX];
	char disk_arg[PATH_MAX + 128], cpus[16], mem[32], cmdline[1024], ttl[24], limits[96];
	uint64_t disk_size = 0;
	if (!sb || !m) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	/* The overlay names its base by absolute path: it is opened by the VMM,
	 * whose working directory is not ours to assume. */
	if (!realpath(cfg->image, m->image)) {
		r = errf(err, errlen, -errno, "image '%s': %s", cfg->image, strerror(errno));
		goto fail;
	}
	m->cpus = cfg->cpus ? cfg->cpus : COVE_CPUS_DEFAULT;
	m->memory_mib = cfg->memory_mib ? cfg->memory_mib : COVE_MEMORY_DEFAULT_MIB;
	if ((r = sandbox_disk_size(cfg, m->image, &disk_size, err, errlen)) < 0)
		goto fail;
	m->limits = (struct registry_limits){ .cpu_quota = cfg->cpu_quota,
		                              .pids_max = cfg->pids_max,
		                              .disk_size = disk_size,
		                              .disk_bps = cfg->disk_bps,
		                              .disk_iops = cfg->disk_iops,
		                              .ttl_s = cfg->ttl_s };
	if ((r = sandbox_create(sb, cfg->name, err, errlen)) < 0 ||
	    (r = sandbox_meta_begin(sb, m, err, errlen)) < 0)
		goto fail;
	snprintf(disk, sizeof(disk), "%s/disk0.qcow2", sb->root);
	snprintf(ready, sizeof(ready), "%s_%u", sb->vsock, PROTO_READY_PORT);
	sandbox_logs(sb, cfg, console, log);
	/* A pre-spawned VMM (coved's pool) for a detached sandbox: its root
	 * becomes ours before anything is put in it (a TAP goes with its start
	 * request). */
	if (cfg->vmm_pool && cfg->detached && (pm = pool_take(cfg->vmm_pool, m->cpus)) &&
	    (r = pool_adopt_root(pm, sb, log, err, errlen)) < 0)
		goto fail;
	if ((r = qcow2_create_overlay(disk, m->image, disk_size, err, errlen)) < 0)
		goto fail;
	struct cgroup_limits lim;
	sandbox_limits(cfg, m->cpus, m->memory_mib, &lim);
	sandbox_tmpfs_room(sb, disk_size, &lim);
	if ((r = pm ? pool_adopt_jail(pm, sb, &lim, log, err, errlen)
	            : jail_prepare(&sb->jail, sb->dir, sb->name, sb->root, &lim, err, errlen)) <
	        0 ||
	    (r = sandbox_net_begin(sb, cfg, &cfg->net, NULL, cfg->net_limits, m, err, errlen)) < 0)
		goto fail;
	lfd = spawn_listen(ready);
	if (lfd < 0) {
		r = errf(err, errlen, lfd, "cannot listen on %s: %s", ready, strerror(-lfd));
		goto fail;
	}
	/* The jailed VMM connects to it for the agent's HELLO. */
	if ((r = jail_give(&sb->jail, ready)) < 0) {
		r = errf(err, errlen, r, "cannot give %s to the jail: %s", ready, strerror(-r));
		goto fail;
	}
	snprintf(cpus, sizeof(cpus), "%u", m->cpus);
	snprintf(mem, sizeof(mem), "%llu", (unsigned long long)m->memory_mib);
	sandbox_disk_limits(limits, sizeof(limits), disk_size, cfg->disk_bps, cfg->disk_iops);
	snprintf(disk_arg, sizeof(disk_arg), "%s,id=cove-root,format=qcow2%s", disk, limits);
	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)cfg->ttl_s);
	/* The guest learns its network from the command line (cove-agent). */
	snprintf(cmdline, sizeof(cmdline), "quiet cove.hostname=%s%s%s%s",
	         cfg->hostname ? cfg->hostname : "cove", sb->net.on ? " " NET_CMDLINE : "",
	         cfg->cmdline ? " " : "", cfg->cmdline ? cfg->cmdline : "");
	const char *argv[COVE_VMM_ARGS_MAX] = { cfg->vmm, "--kernel",  cfg->kernel, "--disk",
		                                disk_arg, "--vsock",   sb->vsock,   "--api",
		                                sb->api,  "--cpus",    cpus,        "--memory",
		                                mem,      "--console", console,     "--cmdline",
		                                cmdline };
	int argc = 17;
	if (cfg->ttl_s) {
		argv[argc++] = "--ttl";
		argv[argc++] = ttl;
	}
	char net_arg[REGISTRY_NET_LIMITS_MAX + 16];
	argc = sandbox_net_args(sb, argv, argc, net_arg, sizeof(net_arg));
	argv[argc] = NULL;
	r = pm ? pool_start(pm, sb, (char *const *)argv, config_boot_timeout_ms(cfg), err, errlen)
	       : vmm_spawn((char *const *)argv, cfg->detached, log, sb, err, errlen);
	pool_member_free(pm);
	pm = NULL;
	sandbox_net_handed(sb);
	/* The guest boots while cove-egress applies its rules. */
	if (r < 0 || (r = net_finish(&sb->net, err, errlen)) < 0 ||
	    (pl.rules && ((r = proxy_send(sb->dir, &pl, &ca, err, errlen)) < 0 ||
	                  (r = proxy_store(sb->dir, &pl, err, errlen)) < 0)))
		goto fail;
	ttl_watch(sb, cfg->ttl_s);
	if ((r = sandbox_meta_vmm(sb, m, err, errlen)) < 0 ||
	    (r = vmm_wait_ready(sb, lfd, config_boot_timeout_ms(cfg), console, log, err, errlen)) <
	        0 ||
	    (ca && (r = proxy_agent_ca(sb, ca, pl.env, err, errlen)) < 0))
		goto fail;
	close(lfd);
	unlink(ready);
	free(m);
	proxy_load_free(&pl);
	free(ca);
	*out = sb;
	return 0;
fail:
	if (lfd >= 0)
		close(lfd);
	free(m);
	proxy_load_free(&pl);
	free(ca);
	sandbox_abort(sb);
	pool_member_free(pm);
	return r;
}

/* Whether the runtime directory still belongs to this sandbox: after its
 * VMM died, another process may have cleaned it and a new sandbox taken
 * the name. */
static bool dir_still_ours(const struct cove_sandbox *sb)
{
	struct registry_meta *m = malloc(sizeof(*m));
	/* Before cove-vmm was spawned the record names us, still starting. */
	bool ours = !m || registry_meta_read(sb->dir, m) < 0 || m->pid == sb->pid ||
	            (m->starting && m->pid == getpid());
	free(m);
	return ours;
}

void sandbox_tmpfs_room(const struct cove_sandbox *sb, uint64_t disk_size, struct cgroup_limits *l)
{
	struct statfs sfs;
	if (l->memory_bytes && disk_size && statfs(sb->root, &sfs) == 0 &&
	    sfs.f_type == TMPFS_MAGIC)
		l->memory_bytes += qcow2_overlay_max_file(disk_size);
}

void sandbox_limits(const struct cove_config *cfg, unsigned int cpus, uint64_t memory_mib,
                    struct cgroup_limits *l)
{
	l->cpu_quota = cfg->cpu_quota;
	/* A snapshot without its note does not say: no memory limit then. */
	l->memory_bytes = memory_mib ? (memory_mib + CGROUP_VMM_OVERHEAD_MIB) << 20 : 0;
	l->pids_max = cfg->pids_max ? cfg->pids_max : cpus + CGROUP_PIDS_SPARE;
	/* cove-egress shares the cgroup. */
	if (cfg->net.mode != COVE_NET_OFF) {
		if (l->memory_bytes)
			l->memory_bytes += (uint64_t)NET_EGRESS_MEMORY_MIB << 20;
		l->pids_max += NET_EGRESS_PIDS;
	}
}

int sandbox_net_begin(struct cove_sandbox *sb, const struct cove_config *cfg,
                      const struct cove_net_policy *policy, const char *policy_json,
                      const char *limits, struct registry_meta *m, char *err, size_t errlen)
{
	if (policy->mode == COVE_NET_OFF && !policy_json)
		return 0;
	json_error_t je;
	json_t *pj = policy_json ? json_loads(policy_json, 0, &je) : net_policy_json(policy);
	if (!pj)
		return errf(err, errlen, -ENOMEM, "cannot make the network policy");
	int r = -EAGAIN;
	if (cfg->net_pool)
		r = net_pool_take(cfg->net_pool, cfg, sb->dir, sb->name, sb->jail.cgroup_fd, pj,
		                  limits, &sb->net, err, errlen);
	if (r == -EAGAIN)
		r = net_setup(&sb->net, sb->dir, sb->name, sb->jail.cgroup_fd, cfg, pj, limits, err,
		              errlen);
	char *text = r == 0 ? json_dumps(pj, JSON_COMPACT) : NULL;
	json_decref(pj);
	if (r < 0)
		return r;
	struct registry_net *n = &m->net;
	n->on = true;
	n->index = sb->net.index;
	n->egress_pid = sb->net.egress_pid;
	n->egress_start = sb->net.egress_start;
	snprintf(n->limits, sizeof(n->limits), "%s", limits ? limits : "");
	if (!text || strlen(text) >= sizeof(n->policy)) {
		free(text);
		return errf(err, errlen, -E2BIG, "the network policy is too large to record");
	}
	memcpy(n->policy, text, strlen(text) + 1);
	free(text);
	/* Recorded at once: whoever finds this entry dead stops cove-egress. */
	r = registry_meta_write(sb->dir, m);
	if (r < 0)
		return errf(err, errlen, r, "cannot write %s/%s: %s", sb->dir, REGISTRY_META,
		            strerror(-r));
	return 0;
}

int sandbox_net_args(const struct cove_sandbox *sb, const char **argv, int argc, char *arg,
                     size_t len)
{
	if (!sb->net.on)
		return argc;
	snprintf(arg, len, "fd=%d%s%s", NET_TAP_FD, sb->net.limits[0] ? "," : "", sb->net.limits);
	argv[argc++] = "--net";
	argv[argc++] = arg;
	return argc;
}

void sandbox_net_handed(struct cove_sandbox *sb)
{
	/* cove-vmm holds the TAP now (or failed to start): ours goes. */
	if (sb->net.tap_fd >= 0)
		close(sb->net.tap_fd);
	sb->net.tap_fd = -1;
}

void sandbox_finish(struct cove_sandbox *sb, int grace_ms)
{
	ttl_unwatch(sb);
	vmm_reap(sb, grace_ms);
	sb->stopped = true;
	/* Before the cgroup goes: cove-egress is in it. */
	net_teardown(&sb->net, sb->name, !sb->dir[0] || dir_still_ours(sb));
	if (sb->jail.cgroup[0] || sb->jail.claim[0])
		jail_release(&sb->jail);
	else if (sb->dir[0] && sb->pid > 0 && dir_still_ours(sb)) {
		cgroup_remove_named(sb->name); /* a handle from cove_open */
		jail_release_named(sb->dir, sb->name);
	}
	if (sb->dir[0] && !getenv("COVE_KEEP_SANDBOX") && dir_still_ours(sb))
		registry_remove_tree(sb->dir);
}

int cove_stop(struct cove_sandbox *sb)
{
	if (!sb || sb->stopped)
		return 0;
	/* The agent gets STOP_AGENT_MS in all (connect, request, its OK);
	 * then vmm_reap's escalation: at most STOP_EXIT_MS for the guest to
	 * power off, VMM_TERM_MS after SIGTERM, VMM_KILL_MS after SIGKILL. */
	bool asked = false;
	struct pollfd p = { .fd = sb->pidfd, .events = POLLIN };
	if (sb->pidfd >= 0 && poll(&p, 1, 0) == 0) {
		char err[128];
		int64_t deadline = mono_ms() + STOP_AGENT_MS;
		int fd = agent_connect_until(sb, deadline, err, sizeof(err));
		if (fd >= 0) {
			asked = proto_send_until(fd, PROTO_SHUTDOWN, 0, "{}", 2, deadline) == 0 &&
			        cove_expect_until(fd, PROTO_OK, NULL, NULL, deadline, err,
			                          sizeof(err)) == 0;
			close(fd);
		}
	}
	sandbox_finish(sb, asked ? STOP_EXIT_MS : 0);
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
	if (sb->notice_pending)
		close(sb->notice_fd);
	free(sb);
}
