/* Snapshots and restores: cove_snapshot asks cove-vmm, through its control
 * socket, to save a running sandbox into a new directory and leaves a note
 * beside the snapshot (the CPUs, memory and image `cove ls` shows of what
 * is restored from it); cove_restore starts a sandbox from such a
 * directory and hands its agent the restore notice. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "cove_limits.h"
#include "io.h"
#include "libcove.h"
#include "memcache.h"
#include "proxy.h"
#include "template.h"

#define API_SNAPSHOT_MS     (10 * 60 * 1000)
#define SNAPSHOT_NOTE       "cove-sandbox.json"
#define SNAPSHOT_STOP_GRACE 10000

/* Makes path absolute for a directory that must not exist yet: its parent
 * is resolved (symlinks too), its last component kept. */
static int new_dir_path(const char *path, char *out, size_t len, char *err, size_t errlen)
{
	char buf[PATH_MAX], parent[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return errf(err, errlen, -ENAMETOOLONG, "path '%s' is too long", path);
	size_t n = strlen(buf);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = 0;
	char *slash = strrchr(buf, '/');
	const char *leaf = slash ? slash + 1 : buf;
	if (!*leaf || !strcmp(leaf, ".") || !strcmp(leaf, ".."))
		return errf(err, errlen, -EINVAL, "'%s' is not a new directory's path", path);
	if (slash)
		*slash = 0;
	const char *dir = !slash ? "." : slash == buf ? "/" : buf;
	if (!realpath(dir, parent))
		return errf(err, errlen, -errno, "'%s': %s", dir, strerror(errno));
	if (snprintf(out, len, "%s/%s", strcmp(parent, "/") ? parent : "", leaf) >= (int)len)
		return errf(err, errlen, -ENAMETOOLONG, "path '%s' is too long", path);
	struct stat st;
	if (lstat(out, &st) == 0)
		return errf(err, errlen, -EEXIST, "'%s' already exists", out);
	return 0;
}

/* What the VMM does not keep but `cove ls` shows of a restored sandbox:
 * best effort, a restore works without it. */
static void snapshot_note_write(const struct cove_sandbox *sb, const char *snapdir)
{
	struct registry_meta *m = malloc(sizeof(*m));
	if (!m || registry_meta_read(sb->dir, m) < 0) {
		free(m);
		return;
	}
	json_t *o = json_pack("{s:i, s:s, s:i, s:I}", "version", 1, "name", m->name, "cpus",
	                      (int)m->cpus, "memory_mib", (json_int_t)m->memory_mib);
	if (o && m->image[0])
		json_object_set_new(o, "image", json_string(m->image));
	if (o &&
	    (registry_limits_put(o, &m->limits) < 0 || registry_net_put(o, &m->net, false) < 0)) {
		json_decref(o);
		o = NULL;
	}
	/* 0600 from its creation, as the rest of the snapshot (it names the
	 * image); never through a symlink. */
	int dfd = o ? open(snapdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	int fd = dfd >= 0 ? openat(dfd, SNAPSHOT_NOTE,
	                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)
	                  : -1;
	char *text = fd >= 0 ? json_dumps(o, JSON_COMPACT) : NULL;
	if (text)
		(void)!write_all(fd, text, strlen(text));
	free(text);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	json_decref(o);
	free(m);
}

/* The CPUs, memory and limits a snapshot was taken with, from its note;
 * 0 when unknown. */
static void snapshot_note_read(const char *snapdir, unsigned int *cpus, uint64_t *memory_mib,
                               struct registry_limits *limits, struct registry_net *net)
{
	memset(net, 0, sizeof(*net));
	char path[PATH_MAX];
	*cpus = 0;
	*memory_mib = 0;
	memset(limits, 0, sizeof(*limits));
	if (snprintf(path, sizeof(path), "%s/%s", snapdir, SNAPSHOT_NOTE) >= (int)sizeof(path))
		return;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
	json_t *c = o ? json_object_get(o, "cpus") : NULL;
	json_t *mem = o ? json_object_get(o, "memory_mib") : NULL;
	if (json_is_integer(c) && json_integer_value(c) > 0 && json_integer_value(c) <= 1024)
		*cpus = (unsigned int)json_integer_value(c);
	if (json_is_integer(mem) && json_integer_value(mem) > 0)
		*memory_mib = (uint64_t)json_integer_value(mem);
	if (json_is_object(o) && registry_limits_get(o, limits) < 0)
		memset(limits, 0, sizeof(*limits));
	if (json_is_object(o) && registry_net_get(o, net) < 0)
		net->on = true; /* it had a NIC; its policy is unreadable: none */
	if (net->on && !net->policy[0])
		snprintf(net->policy, sizeof(net->policy),
		         "{\"mode\":\"none\",\"allow\":[],\"deny\":[]}");
	json_decref(o);
}

/* Removes every entry of the snapshot directory dfd (it holds no
 * directories). */
static void empty_dir(int dfd)
{
	DIR *d = opendir_dup(dfd);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			(void)unlinkat(dfd, e->d_name, 0);
	closedir(d);
}

/* The snapshot the VMM wrote becomes ours again: every entry must be a
 * regular file with one link (nothing the jail could point elsewhere),
 * owned by us, 0600 (frozen disks 0400), the directory 0700. */
static int take_back(int dfd, const char *abs, char *err, size_t errlen)
{
	DIR *d = opendir_dup(dfd);
	if (!d)
		return errf(err, errlen, -errno, "cannot read '%s': %s", abs, strerror(errno));
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = errf(err, errlen, -errno, "%s/%s: %s", abs, e->d_name, strerror(errno));
			break;
		}
		if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
			r = errf(err, errlen, -EPERM,
			         "the VMM left '%s/%s', which is not a plain file: refused", abs,
			         e->d_name);
			break;
		}
		mode_t mode = strncmp(e->d_name, "disk", 4) ? 0600 : 0400;
		if ((st.st_uid != geteuid() &&
		     fchownat(dfd, e->d_name, geteuid(), getegid(), AT_SYMLINK_NOFOLLOW) < 0) ||
		    fchmodat(dfd, e->d_name, mode, 0) < 0)
			r = errf(err, errlen, -errno, "%s/%s: %s", abs, e->d_name, strerror(errno));
	}
	closedir(d);
	if (r == 0 && (fchown(dfd, geteuid(), getegid()) < 0 || fchmod(dfd, 0700) < 0))
		r = errf(err, errlen, -errno, "%s: %s", abs, strerror(errno));
	return r;
}

int cove_snapshot(struct cove_sandbox *sb, const char *dir, bool stop_after, char *err,
                  size_t errlen)
{
	if (!sb || sb->stopped)
		return errf(err, errlen, -ESRCH, "the sandbox is stopped");
	if (!dir || !*dir)
		return errf(err, errlen, -EINVAL, "no snapshot directory given");
	/* A snapshot of a restored sandbox holds the notice's effects. */
	int r = notice_settle(sb, err, errlen);
	if (r < 0)
		return r;
	char abs[PATH_MAX];
	r = new_dir_path(dir, abs, sizeof(abs), err, errlen);
	if (r < 0)
		return r;
	/* We make the directory and hand it over open: a jailed VMM has no
	 * path to it, and writes it as the jail's uid, from which it comes
	 * back to us once written. */
	struct stat root;
	if (stat(sb->root, &root) < 0)
		return errf(err, errlen, -errno, "sandbox %s: %s: %s", sb->name, sb->root,
		            strerror(errno));
	if (mkdir(abs, 0700) < 0)
		return errf(err, errlen, -errno, "cannot create snapshot directory '%s': %s", abs,
		            errno == EEXIST ? "it already exists" : strerror(errno));
	int dfd = open(abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		r = errf(err, errlen, -errno, "cannot open '%s': %s", abs, strerror(errno));
		rmdir(abs);
		return r;
	}
	if (root.st_uid != geteuid() && fchown(dfd, root.st_uid, root.st_gid) < 0) {
		r = errf(err, errlen, -errno, "cannot give '%s' to the jail's uid %u: %s", abs,
		         (unsigned)root.st_uid, strerror(errno));
		goto fail;
	}
	/* A VMM with a jail uid gets a copy it cannot walk out of with "..". */
	int vfd = -1;
	if (root.st_uid != geteuid() && (vfd = jail_dirfd_beneath(dfd)) < 0) {
		r = errf(err, errlen, vfd, "cannot make a directory fd for the jail of '%s': %s",
		         abs, strerror(-vfd));
		goto fail;
	}
	struct cgroup_raise mem;
	if ((r = cgroup_memory_raise(sb->name, &mem)) < 0) {
		if (vfd >= 0)
			close(vfd);
		r = errf(err, errlen, r, "cannot make room in the sandbox's memory.max: %s",
		         strerror(-r));
		goto fail;
	}
	json_t *req = json_pack("{s:s, s:s, s:s, s:b}", "op", "snapshot", "dir", abs, "then",
	                        stop_after ? "stop" : "resume", "dirfd", 1);
	r = vmm_api_call_fd(sb->api, req, vfd >= 0 ? vfd : dfd, NULL, API_SNAPSHOT_MS, err, errlen);
	if (vfd >= 0)
		close(vfd);
	if (!stop_after || r < 0)
		cgroup_memory_settle(sb->name, &mem);
	if (r < 0 || (r = take_back(dfd, abs, err, errlen)) < 0)
		goto fail;
	/* The credential rules (references and sources, never values): a
	 * restore or fork reads the secrets again. */
	if ((r = proxy_copy(sb->dir, abs)) < 0) {
		r = errf(err, errlen, r, "cannot copy %s into the snapshot: %s", PROXY_RULES_FILE,
		         strerror(-r));
		goto fail;
	}
	close(dfd);
	snapshot_note_write(sb, abs);
	if (stop_after)
		sandbox_finish(sb, SNAPSHOT_STOP_GRACE);
	return 0;
fail:
	empty_dir(dfd);
	close(dfd);
	rmdir(abs);
	return r;
}

/* A template's snapshot directory holds its manifest (lib/template.c). */
static bool is_template(const char *dir)
{
	char p[PATH_MAX];
	return snprintf(p, sizeof(p), "%s/" COVE_TEMPLATE_FILE, dir) < (int)sizeof(p) &&
	       access(p, F_OK) == 0;
}

int cove_restore(const struct cove_config *cfg, const char *snapshot_dir, struct cove_sandbox **out,
                 char *err, size_t errlen)
{
	*out = NULL;
	int r = config_check(cfg, false, err, errlen);
	if (r < 0)
		return r;
	struct cove_sandbox *sb = sandbox_new(cfg->detached);
	struct registry_meta *m = calloc(1, sizeof(*m));
	struct registry_net *note_net = NULL;
	char console[PATH_MAX], log[PATH_MAX], hostname[REGISTRY_NAME_MAX + 1];
	char rules_path[PATH_MAX + sizeof(PROXY_RULES_FILE) + 1];
	struct proxy_load pl = { 0 };
	char *ca = NULL;
	struct stat st;
	struct pool_member *pm = NULL;
	if (!sb || !m) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	if (!realpath(snapshot_dir, m->restored_from) || stat(m->restored_from, &st) < 0) {
		r = errf(err, errlen, -errno, "snapshot '%s': %s", snapshot_dir, strerror(errno));
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		r = errf(err, errlen, -ENOTDIR, "snapshot '%s' is not a directory", snapshot_dir);
		goto fail;
	}
	note_net = malloc(sizeof(*note_net));
	if (!note_net) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	snapshot_note_read(m->restored_from, &m->cpus, &m->memory_mib, &m->limits, note_net);
	/* The snapshot's guest has a NIC or not; a restore cannot change that.
	 * It gets a fresh namespace, TAP and cove-egress with the snapshot's
	 * policy, or the one cfg gives. */
	if (!note_net->on && cfg->net.mode != COVE_NET_OFF) {
		r = errf(err, errlen, -EINVAL,
		         "snapshot '%s' was taken without networking: a restore cannot add a NIC",
		         snapshot_dir);
		goto fail;
	}
	struct cove_config netcfg = *cfg;
	if (note_net->on && cfg->net.mode == COVE_NET_OFF)
		netcfg.net.mode = COVE_NET_NONE; /* for the checks; the policy is the note's */
	const char *net_limits = cfg->net_limits ? cfg->net_limits : note_net->limits;
	if (note_net->on && (r = config_check_net_host(&netcfg, err, errlen)) < 0)
		goto fail;
	/* Its credential rules (the caller's, else the snapshot's copy), with
	 * every secret read again, before anything starts. */
	const char *rp = cfg->proxy_rules;
	snprintf(rules_path, sizeof(rules_path), "%s/%s", m->restored_from, PROXY_RULES_FILE);
	if (!rp && access(rules_path, F_OK) == 0)
		rp = rules_path;
	if (rp && !note_net->on) {
		r = errf(err, errlen, -EINVAL,
		         "snapshot '%s' was taken without networking: no --proxy-rules",
		         snapshot_dir);
		goto fail;
	}
	if (rp && (r = proxy_load_file(rp, &pl, err, errlen)) < 0)
		goto fail;
	/* The snapshot's limits hold for the restored sandbox, except those the
	 * caller set: eff is the configuration the sandbox really gets. */
	struct cove_config eff = netcfg;
	struct registry_limits *l = &m->limits;
	eff.cpu_quota = cfg->cpu_quota ? cfg->cpu_quota : l->cpu_quota;
	eff.pids_max = cfg->pids_max ? cfg->pids_max : l->pids_max;
	eff.disk_bps = cfg->disk_bps ? cfg->disk_bps : l->disk_bps;
	eff.disk_iops = cfg->disk_iops ? cfg->disk_iops : l->disk_iops;
	eff.ttl_s = cfg->ttl_s ? cfg->ttl_s : l->ttl_s; /* a fresh ttl of that length */
	*l = (struct registry_limits){ .cpu_quota = eff.cpu_quota,
		                       .pids_max = eff.pids_max,
		                       .disk_size = l->disk_size,
		                       .disk_bps = eff.disk_bps,
		                       .disk_iops = eff.disk_iops,
		                       .ttl_s = eff.ttl_s };
	if ((r = config_check_limits(&eff, err, errlen)) < 0 ||
	    (r = sandbox_create(sb, cfg->name, err, errlen)) < 0 ||
	    (r = sandbox_meta_begin(sb, m, err, errlen)) < 0)
		goto fail;
	sandbox_logs(sb, cfg, console, log);
	struct cgroup_limits lim;
	sandbox_limits(&eff, m->cpus ? m->cpus : COVE_CPUS_MAX, m->memory_mib, &lim);
	/* A pre-spawned VMM of the snapshot's vCPU count (coved's pool), for a
	 * detached sandbox (a TAP goes with its start request); else one is
	 * spawned. */
	if (cfg->vmm_pool && cfg->detached && m->cpus)
		pm = pool_take(cfg->vmm_pool, m->cpus);
	if (pm)
		r = pool_adopt_root(pm, sb, log, err, errlen);
	if (r == 0)
		r = pm ? pool_adopt_jail(pm, sb, &lim, log, err, errlen)
		       : jail_prepare(&sb->jail, sb->dir, sb->name, sb->root, &lim, err, errlen);
	if (r == 0 && note_net->on)
		r = sandbox_net_begin(sb, &eff, &cfg->net,
		                      cfg->net.mode == COVE_NET_OFF ? note_net->policy : NULL,
		                      net_limits[0] ? net_limits : NULL, m, err, errlen);
	free(note_net);
	note_net = NULL;
	if (r < 0)
		goto fail;
	/* The root disk (0) continues on a fresh overlay: the same rates, and
	 * the cap its size allows (known from the note; else none). */
	char limit_arg[128], limits[96], ttl[24];
	limits[0] = 0;
	if (l->disk_size)
		sandbox_disk_limits(limits, sizeof(limits), l->disk_size, eff.disk_bps,
		                    eff.disk_iops);
	else if (eff.disk_bps || eff.disk_iops)
		snprintf(limits, sizeof(limits), ",bps=%llu,iops=%llu",
		         (unsigned long long)eff.disk_bps, (unsigned long long)eff.disk_iops);
	snprintf(limit_arg, sizeof(limit_arg), "0%s", limits);
	snprintf(ttl, sizeof(ttl), "%llu", (unsigned long long)eff.ttl_s);
	const char *argv[28] = { cfg->vmm, "--restore", m->restored_from, "--overlay-dir",
		                 sb->root, "--vsock",   sb->vsock,        "--api",
		                 sb->api,  "--console", console };
	int argc = 11;
	/* A template's memory from the huge-page cache (memcache.c), which
	 * every restore of it shares; other snapshots are mapped as they are
	 * unless the caller asks (cfg->memcache). */
	char memcopy[PATH_MAX], why[PATH_MAX + 128];
	if (cfg->memcache == COVE_MEMCACHE_ALL ||
	    (cfg->memcache == COVE_MEMCACHE_TEMPLATES && is_template(m->restored_from))) {
		int64_t t0 = mono_ns();
		if (memcache_get(m->restored_from, memcopy, sizeof(memcopy), why, sizeof(why))) {
			argv[argc++] = "--restore-memory";
			argv[argc++] = memcopy;
			vmm_log_line(log, "memory: %s (the template memory cache, %.2f ms)",
			             memcopy, (double)(mono_ns() - t0) / 1e6);
		} else {
			vmm_log_line(log, "memory: the snapshot's own file (cache: %s)", why);
		}
	}
	if (limits[0]) {
		argv[argc++] = "--disk-limit";
		argv[argc++] = limit_arg;
	}
	if (eff.ttl_s) {
		argv[argc++] = "--ttl";
		argv[argc++] = ttl;
	}
	/* The device state and MAC come from the snapshot; the TAP is new. */
	char net_arg[REGISTRY_NET_LIMITS_MAX + 16];
	argc = sandbox_net_args(sb, argv, argc, net_arg, sizeof(net_arg));
	argv[argc] = NULL;
	unsigned int timeout_ms = config_boot_timeout_ms(cfg);
	int afd = -1;
	r = pm ? pool_start(pm, sb, (char *const *)argv, timeout_ms, err, errlen)
	       : vmm_spawn((char *const *)argv, cfg->detached, log, sb, err, errlen);
	pool_member_free(pm);
	pm = NULL;
	sandbox_net_handed(sb);
	/* The guest boots while cove-egress applies its rules. */
	if (r < 0 || (r = net_finish(&sb->net, err, errlen)) < 0 ||
	    (pl.rules && ((r = proxy_send(sb->dir, &pl, &ca, err, errlen)) < 0 ||
	                  (r = proxy_store(sb->dir, &pl, err, errlen)) < 0)))
		goto fail;
	ttl_watch(sb, eff.ttl_s);
	if ((r = sandbox_meta_vmm(sb, m, err, errlen)) < 0 ||
	    (r = afd = vmm_wait_agent(sb, timeout_ms, console, log, err, errlen)) < 0)
		goto fail;
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
	prefetch_plan(sb, m->restored_from, (uint64_t)m->memory_mib << 20);
	r = notice_begin(sb, afd, cfg->hostname ? cfg->hostname : hostname, timeout_ms, err,
	                 errlen);
	if (r == 0)
		r = notice_settle(sb, err, errlen);
	/* This sandbox's own CA (a fork's differs from its snapshot's). */
	if (r == 0 && ca)
		r = proxy_agent_ca(sb, ca, pl.env, err, errlen);
	if (r < 0)
		goto fail;
	free(m);
	proxy_load_free(&pl);
	free(ca);
	*out = sb;
	return 0;
fail:
	free(note_net);
	free(m);
	proxy_load_free(&pl);
	free(ca);
	sandbox_abort(sb);
	pool_member_free(pm);
	return r;
}
