/* cove_restore: a sandbox from a snapshot directory, in steps: the
 * snapshot read (its note, network, credential rules and limits), the
 * sandbox prepared (entry, jail or pool member, network), cove-vmm started
 * until the restored agent answers, then the restore notice. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "lib/restore.h"

#include "cove_limits.h"
#include "errf.h"
#include "lib/agent/agent_client.h"
#include "lib/agent/notice.h"
#include "lib/base/cgroup.h"
#include "lib/base/handle.h"
#include "lib/base/jail.h"
#include "lib/base/registry.h"
#include "lib/config.h"
#include "lib/net/net.h"
#include "lib/proxy.h"
#include "lib/sandbox.h"
#include "lib/snapshot.h"
#include "lib/vmm/limits.h"
#include "lib/vmm/memcache.h"
#include "lib/vmm/pool.h"
#include "lib/vmm/pool_member.h"
#include "lib/vmm/prefetch.h"
#include "lib/vmm/vmm_proc.h"

/* A restore in progress: what the steps share. */
struct restore {
	struct cove_sandbox *sb;
	struct registry_meta *m;
	struct registry_net *note_net; /* the snapshot's network, until it is set up */
	char console[PATH_MAX], log[PATH_MAX];
	char rules_path[PATH_MAX + sizeof(PROXY_RULES_FILE) + 1];
	struct proxy_load pl;
	char *ca;
	struct pool_member *pm;
	/* The configuration the sandbox really gets: the caller's, with the
	 * snapshot's limits for those it left 0. */
	struct cove_config eff;
	const char *net_limits;
	int afd; /* the restored agent's connection */
	/* cove-vmm's arguments and the strings they point to. */
	const char *argv[28];
	char limit_arg[128], limits[96], ttl[24], memcopy[PATH_MAX];
	char net_arg[REGISTRY_NET_LIMITS_MAX + 16];
};

/* A watch for files made in the directory of path (inotify), or -1. */
static int watch_dir_of(const char *path)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	*slash = 0;
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (in >= 0 && inotify_add_watch(in, dir[0] ? dir : "/", IN_CREATE | IN_MOVED_TO) < 0) {
		close(in);
		in = -1;
	}
	return in;
}

/* After a restore there is no HELLO: the agent was serving when the
 * snapshot was taken.  Polls for its answer while watching cove-vmm;
 * returns the open connection, or -errno as vmm_wait_ready. */
static int wait_agent(struct cove_sandbox *sb, unsigned int timeout_ms, const char *console,
                      const char *log, char *err, size_t errlen)
{
	int64_t deadline = mono_ms() + timeout_ms;
	/* Until cove-vmm has made its vsock socket a connect fails at once.
	 * Rather than retrying on a short timer (64 restores at once on a
	 * busy host spun on it: each try is four system calls, and the tries
	 * took the CPU the VMMs needed), the wait is for a file made in the
	 * sandbox's directory (the socket's bind), for cove-vmm's exit, or
	 * for a retry interval that doubles from 1 ms to 100 ms (a socket
	 * bound but not listening yet, or no inotify). */
	int in = watch_dir_of(sb->vsock);
	int step = 1, r;
	for (;;) {
		/* The whole budget for the handshake too: a guest woken among
		 * many on a busy host may take more than AGENT_STEP_MS to answer
		 * a connection it has accepted. */
		int fd = agent_connect_until(sb, deadline, err, errlen);
		if (fd >= 0 || (fd != -ENOENT && fd != -ECONNREFUSED)) {
			r = fd;
			break;
		}
		int64_t left = deadline - mono_ms();
		if (left <= 0) {
			r = errf(err, errlen, -ETIMEDOUT,
			         "the restored agent did not answer within %u ms (console: %s)",
			         timeout_ms, console);
			break;
		}
		struct pollfd p[2] = { { .fd = sb->pidfd, .events = POLLIN },
			               { .fd = in, .events = POLLIN } };
		int n = poll(p, in >= 0 ? 2 : 1, (int)(left < step ? left : step));
		if (n < 0 && errno != EINTR) {
			r = errf(err, errlen, -errno, "poll: %s", strerror(errno));
			break;
		}
		if (n > 0 && p[0].revents) {
			r = vmm_died(sb, log, console, "during the restore", err, errlen);
			break;
		}
		step = step < 50 ? step * 2 : 100;
		if (n > 0 && in >= 0 && p[1].revents) {
			char ev[4096];
			while (read(in, ev, sizeof(ev)) > 0)
				;
			step = 1; /* something new: perhaps the socket, soon listening */
		}
	}
	if (in >= 0)
		close(in);
	return r;
}

/* A template's snapshot directory holds its manifest (lib/template/). */
static bool is_template(const char *dir)
{
	char p[PATH_MAX];
	return snprintf(p, sizeof(p), "%s/" COVE_TEMPLATE_FILE, dir) < (int)sizeof(p) &&
	       access(p, F_OK) == 0;
}

/* The snapshot's limits hold for the restored sandbox, except those the
 * caller set. */
static void restore_limits(struct restore *rs, const struct cove_config *cfg)
{
	struct cove_config *eff = &rs->eff;
	struct registry_limits *l = &rs->m->limits;
	eff->cpu_quota = cfg->cpu_quota ? cfg->cpu_quota : l->cpu_quota;
	eff->pids_max = cfg->pids_max ? cfg->pids_max : l->pids_max;
	eff->disk_bps = cfg->disk_bps ? cfg->disk_bps : l->disk_bps;
	eff->disk_iops = cfg->disk_iops ? cfg->disk_iops : l->disk_iops;
	eff->ttl_s = cfg->ttl_s ? cfg->ttl_s : l->ttl_s; /* a fresh ttl of that length */
	*l = (struct registry_limits){ .cpu_quota = eff->cpu_quota,
		                       .pids_max = eff->pids_max,
		                       .disk_size = l->disk_size,
		                       .disk_bps = eff->disk_bps,
		                       .disk_iops = eff->disk_iops,
		                       .ttl_s = eff->ttl_s };
}

/* Step 1: the snapshot directory, its note, its network and credential
 * rules (every secret read again), before anything starts. */
static int restore_read(struct restore *rs, const struct cove_config *cfg, const char *snapshot_dir,
                        char *err, size_t errlen)
{
	struct registry_meta *m = rs->m;
	struct stat st;
	int r;
	if (!realpath(snapshot_dir, m->restored_from) || stat(m->restored_from, &st) < 0)
		return errf(err, errlen, -errno, "snapshot '%s': %s", snapshot_dir,
		            strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return errf(err, errlen, -ENOTDIR, "snapshot '%s' is not a directory",
		            snapshot_dir);
	struct registry_net *note_net = rs->note_net = malloc(sizeof(*rs->note_net));
	if (!note_net)
		return errf(err, errlen, -ENOMEM, "out of memory");
	snapshot_note_read(m->restored_from, &m->cpus, &m->memory_mib, &m->limits, note_net);
	/* The snapshot's guest has a NIC or not; a restore cannot change that.
	 * It gets a fresh namespace, TAP and cove-egress with the snapshot's
	 * policy, or the one cfg gives. */
	if (!note_net->on && cfg->net.mode != COVE_NET_OFF)
		return errf(
		    err, errlen, -EINVAL,
		    "snapshot '%s' was taken without networking: a restore cannot add a NIC",
		    snapshot_dir);
	rs->eff = *cfg;
	if (note_net->on && cfg->net.mode == COVE_NET_OFF)
		rs->eff.net.mode = COVE_NET_NONE; /* for the checks; the policy is the note's */
	rs->net_limits = cfg->net_limits ? cfg->net_limits : note_net->limits;
	if (note_net->on && (r = config_check_net_host(&rs->eff, err, errlen)) < 0)
		return r;
	/* Its credential rules: the caller's, else the snapshot's copy. */
	const char *rp = cfg->proxy_rules;
	snprintf(rs->rules_path, sizeof(rs->rules_path), "%s/%s", m->restored_from,
	         PROXY_RULES_FILE);
	if (!rp && access(rs->rules_path, F_OK) == 0)
		rp = rs->rules_path;
	if (rp && !note_net->on)
		return errf(err, errlen, -EINVAL,
		            "snapshot '%s' was taken without networking: no --proxy-rules",
		            snapshot_dir);
	if (rp && (r = proxy_load_file(rp, &rs->pl, err, errlen)) < 0)
		return r;
	restore_limits(rs, cfg);
	return 0;
}

/* Step 2: the registry entry, the jail (or a pool member's), the
 * network. */
static int restore_prepare(struct restore *rs, const struct cove_config *cfg, char *err,
                           size_t errlen)
{
	struct cove_sandbox *sb = rs->sb;
	struct registry_meta *m = rs->m;
	int r;
	if ((r = config_check_limits(&rs->eff, err, errlen)) < 0 ||
	    (r = sandbox_create(sb, cfg->name, err, errlen)) < 0 ||
	    (r = sandbox_meta_begin(sb, m, err, errlen)) < 0)
		return r;
	sandbox_logs(sb, cfg, rs->console, rs->log);
	struct cgroup_limits lim;
	sandbox_limits(&rs->eff, m->cpus ? m->cpus : COVE_CPUS_MAX, m->memory_mib, &lim);
	/* The restore's fresh overlay is the VMM's to fill as a cold boot's:
	 * on tmpfs it is charged to the sandbox (an OOM kill otherwise, seen
	 * when a restored build step wrote a venv). */
	sandbox_tmpfs_room(sb, m->limits.disk_size, &lim);
	/* A pre-spawned VMM of the snapshot's vCPU count (coved's pool), for a
	 * detached sandbox (a TAP goes with its start request); else one is
	 * spawned. */
	if (cfg->vmm_pool && cfg->detached && m->cpus)
		rs->pm = pool_take(cfg->vmm_pool, m->cpus);
	if (rs->pm)
		r = pool_adopt_root(rs->pm, sb, rs->log, err, errlen);
	if (r == 0)
		r = rs->pm
		        ? pool_adopt_jail(rs->pm, sb, &lim, rs->log, err, errlen)
		        : jail_prepare(&sb->jail, sb->dir, sb->name, sb->root, &lim, err, errlen);
	if (r == 0 && rs->note_net->on)
		r = sandbox_net_begin(sb, &rs->eff, &cfg->net,
		                      cfg->net.mode == COVE_NET_OFF ? rs->note_net->policy : NULL,
		                      rs->net_limits[0] ? rs->net_limits : NULL, m, err, errlen);
	return r;
}

/* cove-vmm's arguments into rs->argv (NULL-terminated). */
static void restore_argv(struct restore *rs, const struct cove_config *cfg)
{
	struct cove_sandbox *sb = rs->sb;
	struct registry_meta *m = rs->m;
	const struct cove_config *eff = &rs->eff;
	/* The root disk (0) continues on a fresh overlay: the same rates, and
	 * the cap its size allows (known from the note; else none). */
	rs->limits[0] = 0;
	if (m->limits.disk_size)
		sandbox_disk_limits(rs->limits, sizeof(rs->limits), m->limits.disk_size,
		                    eff->disk_bps, eff->disk_iops);
	else if (eff->disk_bps || eff->disk_iops)
		snprintf(rs->limits, sizeof(rs->limits), ",bps=%llu,iops=%llu",
		         (unsigned long long)eff->disk_bps, (unsigned long long)eff->disk_iops);
	snprintf(rs->limit_arg, sizeof(rs->limit_arg), "0%s", rs->limits);
	snprintf(rs->ttl, sizeof(rs->ttl), "%llu", (unsigned long long)eff->ttl_s);
	const char **argv = rs->argv;
	const char *fixed[] = { cfg->vmm, "--restore", m->restored_from, "--overlay-dir",
		                sb->root, "--vsock",   sb->vsock,        "--api",
		                sb->api,  "--console", rs->console };
	int argc = 0;
	for (; argc < (int)(sizeof(fixed) / sizeof(fixed[0])); argc++)
		argv[argc] = fixed[argc];
	/* A template's memory from the huge-page cache (memcache.c), which
	 * every restore of it shares; other snapshots are mapped as they are
	 * unless the caller asks (cfg->memcache). */
	char why[PATH_MAX + 128];
	if (cfg->memcache == COVE_MEMCACHE_ALL ||
	    (cfg->memcache == COVE_MEMCACHE_TEMPLATES && is_template(m->restored_from))) {
		int64_t t0 = mono_ns();
		if (memcache_get(m->restored_from, rs->memcopy, sizeof(rs->memcopy), why,
		                 sizeof(why))) {
			argv[argc++] = "--restore-memory";
			argv[argc++] = rs->memcopy;
			vmm_log_line(rs->log, "memory: %s (the template memory cache, %.2f ms)",
			             rs->memcopy, (double)(mono_ns() - t0) / 1e6);
		} else {
			vmm_log_line(rs->log, "memory: the snapshot's own file (cache: %s)", why);
		}
	}
	if (rs->limits[0]) {
		argv[argc++] = "--disk-limit";
		argv[argc++] = rs->limit_arg;
	}
	if (eff->ttl_s) {
		argv[argc++] = "--ttl";
		argv[argc++] = rs->ttl;
	}
	/* The device state and MAC come from the snapshot; the TAP is new. */
	argc = sandbox_net_args(sb, argv, argc, rs->net_arg, sizeof(rs->net_arg));
	argv[argc] = NULL;
}

/* Step 3: cove-vmm (spawned, or the pool member started), the network
 * finished and the credential rules given, until the restored agent
 * answers (rs->afd). */
static int restore_start(struct restore *rs, const struct cove_config *cfg, char *err,
                         size_t errlen)
{
	struct cove_sandbox *sb = rs->sb;
	restore_argv(rs, cfg);
	unsigned int timeout_ms = config_boot_timeout_ms(cfg);
	char *const *argv = (char *const *)rs->argv;
	int r = rs->pm ? pool_start(rs->pm, sb, argv, timeout_ms, err, errlen)
	               : vmm_spawn(argv, cfg->detached, rs->log, sb, err, errlen);
	pool_member_free(rs->pm);
	rs->pm = NULL;
	sandbox_net_handed(sb);
	/* The guest boots while cove-egress applies its rules. */
	if (r < 0 || (r = net_finish(&sb->net, err, errlen)) < 0 ||
	    (rs->pl.rules && ((r = proxy_send(sb->dir, &rs->pl, &rs->ca, err, errlen)) < 0 ||
	                      (r = proxy_store(sb->dir, &rs->pl, err, errlen)) < 0)))
		return r;
	ttl_watch(sb, rs->eff.ttl_s);
	if ((r = sandbox_meta_vmm(sb, rs->m, err, errlen)) < 0)
		return r;
	r = rs->afd = wait_agent(sb, timeout_ms, rs->console, rs->log, err, errlen);
	return r < 0 ? r : 0;
}

/* Step 4: the restore notice (new clock, hostname, entropy) and this
 * sandbox's own CA (a fork's differs from its snapshot's). */
static int restore_notice(struct restore *rs, const struct cove_config *cfg, char *err,
                          size_t errlen)
{
	struct cove_sandbox *sb = rs->sb;
	char hostname[REGISTRY_NAME_MAX + 1];
	/* A host name may not hold '_', which sandbox names may. */
	snprintf(hostname, sizeof(hostname), "%s", sb->name);
	for (char *c = hostname; *c; c++)
		if (*c == '_')
			*c = '-';
	/* The notice goes out now and its answer is awaited here
	 * (notice_settle() retries one caught in the guest's vsock transport
	 * reset).  notice.c can also leave the answer to the first exec, on
	 * the same connection (one round trip for both), but a connection of
	 * `cove run` was seen reset after the notice's answer and before the
	 * command's STARTED, where a retry could run the command twice: until
	 * that reset is understood every restore settles its notice first. */
	prefetch_plan(sb, rs->m->restored_from, (uint64_t)rs->m->memory_mib << 20);
	int r = notice_begin(sb, rs->afd, cfg->hostname ? cfg->hostname : hostname,
	                     config_boot_timeout_ms(cfg), err, errlen);
	if (r == 0)
		r = notice_settle(sb, err, errlen);
	if (r == 0 && rs->ca)
		r = proxy_agent_ca(sb, rs->ca, rs->pl.env, err, errlen);
	return r;
}

int cove_restore(const struct cove_config *cfg, const char *snapshot_dir, struct cove_sandbox **out,
                 char *err, size_t errlen)
{
	*out = NULL;
	int r = config_check(cfg, false, err, errlen);
	if (r < 0)
		return r;
	struct restore rs = { .sb = sandbox_new(cfg->detached), .afd = -1 };
	rs.m = calloc(1, sizeof(*rs.m));
	if (!rs.sb || !rs.m)
		r = errf(err, errlen, -ENOMEM, "out of memory");
	if (r == 0)
		r = restore_read(&rs, cfg, snapshot_dir, err, errlen);
	if (r == 0)
		r = restore_prepare(&rs, cfg, err, errlen);
	free(rs.note_net);
	rs.note_net = NULL;
	if (r == 0)
		r = restore_start(&rs, cfg, err, errlen);
	if (r == 0)
		r = restore_notice(&rs, cfg, err, errlen);
	free(rs.m);
	proxy_load_free(&rs.pl);
	free(rs.ca);
	if (r < 0) {
		sandbox_abort(rs.sb);
		pool_member_free(rs.pm);
		return r;
	}
	*out = rs.sb;
	return 0;
}
