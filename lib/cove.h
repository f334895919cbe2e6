/* libcove: the host-side C API for embedding Cove sandboxes.
 *
 * A sandbox is one cove-vmm child process running a microVM whose PID 1 is
 * cove-agent.  Typical use:
 *
 *   struct cove_config cfg;
 *   cove_config_defaults(&cfg);           // kernel, image, vmm found beside libcove's binary
 *   cfg.memory_mib = 512;
 *   struct cove_sandbox *sb;
 *   if (cove_start(&cfg, &sb, err, sizeof(err)) < 0) ...   // returns once the agent answered
 *   struct cove_exec_result res;
 *   cove_exec(sb, &opts, &res);           // output through callbacks
 *   cove_put_file(sb, "local.txt", "/root/x.txt", 0644);
 *   cove_stop(sb);                        // guest shuts down, VMM reaped, files removed
 *   cove_free(sb);
 *
 * All functions return 0 or a negative errno; those taking err/errlen also
 * leave a one-line message there.  A sandbox may be used from several
 * threads at once (each call opens its own agent connection). */
#ifndef COVE_H
#define COVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/agent/exec.h"
#include "lib/agent/proc.h"
#include "lib/base/cove_types.h"
#include "lib/net/net_ctl.h"

/* A pool of sandbox networks made ahead of time (lib/net/net_pool.c): each
 * slot is a namespace with its TAP and veth and a cove-egress that
 * denies everything, ready for a sandbox to take and give its own policy
 * in one transaction.  A background thread keeps size slots ready (1 to
 * COVE_NET_POOL_MAX) on the runtime directory of the caller, using cfg's
 * egress and net_dns; slots left by a pool whose process died are removed
 * first.  Set cfg->net_pool to use it.  cove_net_pool_free removes every
 * slot not taken (taken ones belong to their sandboxes). */
int cove_net_pool_new(const struct cove_config *cfg, unsigned int size, struct cove_net_pool **out,
                      char *err, size_t errlen) __attribute__((warn_unused_result));
void cove_net_pool_free(struct cove_net_pool *p);
void cove_net_pool_stats(struct cove_net_pool *p, struct cove_net_pool_stats *st);

/* Fills cfg with defaults: cove-vmm, build/vmlinux and
 * build/images/minimal.ext4 found relative to the running executable
 * (build/bin/X -> build/...), overridable with $COVE_VMM, $COVE_KERNEL,
 * $COVE_IMAGE. */
void cove_config_defaults(struct cove_config *cfg);

/* Resolves an image name: "minimal", "debian" (build/images/NAME.ext4
 * beside the executable, or $COVE_IMAGES/NAME.ext4) or a path.  Returns a
 * malloc'ed path or NULL. */
char *cove_image_path(const char *name_or_path);

/* Boots a sandbox and waits until its agent announces itself (no sleeps:
 * the agent connects to the host).  Fails with a message naming the
 * problem: sizes out of bounds (-EINVAL, before anything else), no
 * /dev/kvm, a missing kernel or image, cove-vmm exiting early (its last
 * console lines), or the boot timeout. */
int cove_start(const struct cove_config *cfg, struct cove_sandbox **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The sandbox's runtime directory and cove-vmm's pid. */
const char *cove_sandbox_dir(const struct cove_sandbox *sb);
pid_t cove_vmm_pid(const struct cove_sandbox *sb);

/* cove_exec: lib/agent/exec.h. */

/* Streams a local file into the guest (atomically replaced there). */
int cove_put_file(struct cove_sandbox *sb, const char *local, const char *guest, uint32_t mode,
                  char *err, size_t errlen) __attribute__((warn_unused_result));
/* Streams a guest file to a local path (written to a temporary name and
 * renamed, so a failure leaves nothing half-written). */
int cove_get_file(struct cove_sandbox *sb, const char *guest, const char *local, char *err,
                  size_t errlen) __attribute__((warn_unused_result));
/* cove_get_file with a size limit: a file larger than max_bytes is refused
 * (-EFBIG), nothing left behind.  cove_get_file's limit is
 * COVE_GET_MAX_DEFAULT.  The local file's mode is the guest's & 0755 &
 * ~umask.  Every step has a deadline (an inactivity bound while data
 * flows). */
int cove_get_file_max(struct cove_sandbox *sb, const char *guest, const char *local,
                      uint64_t max_bytes, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Round trip to the agent. */
int cove_ping(struct cove_sandbox *sb, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Tells the agent of a sandbox just restored from a snapshot who it is now
 * (PROTO_RESTORED, docs/protocol.md): the host's CLOCK_REALTIME, a host
 * name (1-64 of [A-Za-z0-9.-]), a sandbox id (1-64 of [A-Za-z0-9._-]; the
 * guest keeps it in /run/cove/sandbox-id) and 32 fresh bytes from
 * getrandom() that the guest mixes into its kernel RNG before reseeding it,
 * so forks of one snapshot neither share a clock nor random numbers.  Call
 * once the restored agent serves, before running anything in it.  -EINVAL
 * for a bad name (nothing sent), -EIO when the guest could not reseed, the
 * agent's errno when it refused, or a connection error. */
int cove_agent_restored(struct cove_sandbox *sb, const char *hostname, const char *sandbox_id,
                        char *err, size_t errlen) __attribute__((warn_unused_result));

/* Whether cove-vmm has exited, waiting up to wait_ms for it (a child is
 * left for cove_stop to reap): a command whose connection broke calls it,
 * and the connection closes a moment before the process ends.  When it has, and why is not NULL, a one-line reason goes there: "the
 * sandbox reached its --ttl of 5 s" for a deadline (also when cove-vmm
 * did not stop by itself and libcove killed it, ttl_s + 3 s after the
 * start), else cove-vmm's status and its log's last line.  For a command
 * that failed because the sandbox went away. */
bool cove_sandbox_exited(struct cove_sandbox *sb, int wait_ms, char *why, size_t len);

/* Asks the guest to shut down, waits for cove-vmm to exit (killing it
 * after a grace period) and removes the runtime directory. */
int cove_stop(struct cove_sandbox *sb);

/* Frees the handle; stops the sandbox first if it still runs, unless it
 * was started detached or attached with cove_open (those keep running). */
void cove_free(struct cove_sandbox *sb);

/* ---- Named sandboxes, the registry, snapshots -------------------------- */

/* Every sandbox has an entry in the runtime directory ($COVE_RUNTIME_DIR,
 * $XDG_RUNTIME_DIR/cove, /run/cove for root, else /tmp/cove-<uid>): the
 * directory <base>/<name>/ with its meta.json, sockets, disk overlay and
 * logs.  Any process of the same user finds a sandbox there by name.
 *
 * cove_config.name: 1 to COVE_NAME_MAX of [A-Za-z0-9_.-], not starting
 * with '.'; cove_start fails with -EEXIST ("sandbox NAME already exists")
 * when the name is taken.  cove_config.detached: cove-vmm is started in a
 * session of its own, not tied to this process (no parent-death signal),
 * and cove_free only releases the handle. */
#define COVE_NAME_MAX 32

/* Whether name is a valid sandbox name (above). */
bool cove_name_valid(const char *name);

/* The sandbox's registry name (anonymous ones have their sb-XXXXXX). */
const char *cove_sandbox_name(const struct cove_sandbox *sb);

/* Attaches to a running sandbox by name.  The handle is not cove-vmm's
 * parent: liveness comes from a pidfd.  cove_stop on it stops the sandbox;
 * cove_free only releases the handle.  -ENOENT: no such sandbox; -EAGAIN:
 * it is still starting; -ESRCH: its cove-vmm had died, and its entry has
 * been removed; -EINVAL: not a valid name. */
int cove_open(const char *name, struct cove_sandbox **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

enum cove_state {
	COVE_STATE_STARTING, /* its creator is still setting it up */
	COVE_STATE_RUNNING,
	COVE_STATE_PAUSED,
	COVE_STATE_DEAD, /* cove-vmm is gone; the entry was removed by this call */
};

struct cove_info {
	char name[COVE_NAME_MAX + 1];
	enum cove_state state;
	pid_t pid; /* cove-vmm (its creator while starting; 0 if unknown) */
	unsigned int cpus;
	uint64_t memory_mib;
	char *image;         /* root image it booted from, or NULL */
	char *restored_from; /* snapshot directory it was restored from, or NULL */
	int64_t created;     /* Unix time in seconds; 0 if unknown */
	/* Its limits, as struct cove_config's (0: none; disk_size: the root
	 * disk's virtual size, 0 if unknown). */
	double cpu_quota;
	uint64_t pids_max, disk_size, disk_bps, disk_iops, ttl_s;
	/* Its network: NULL without one, else the policy as JSON
	 * ({"mode":..., "allow":[...], "deny":[...]}, malloc'ed), and the
	 * sandbox's index (its host link is cv<index>). */
	char *net_policy;
	unsigned int net_index;
};

/* "starting", "running", "paused", "dead". */
const char *cove_state_name(enum cove_state state);

/* Lists the runtime directory's sandboxes, sorted by name, into a malloc'ed
 * array (free it with cove_list_free).  Entries whose cove-vmm is gone
 * (the pid does not exist, is a zombie, or was reused: its start time
 * differs from the one recorded) are removed and listed once with
 * COVE_STATE_DEAD. */
int cove_list(struct cove_info **out, size_t *count, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void cove_list_free(struct cove_info *list, size_t count);

/* Snapshots a running sandbox into dir (made absolute; it must not exist)
 * through cove-vmm's control socket.  The sandbox then resumes, or with
 * stop_after its cove-vmm exits and the sandbox is stopped as by
 * cove_stop (cove_free is still needed).  The disk's current overlay moves
 * into the snapshot; the sandbox continues on a fresh one. */
int cove_snapshot(struct cove_sandbox *sb, const char *dir, bool stop_after, char *err,
                  size_t errlen) __attribute__((warn_unused_result));

/* A template's snapshot directory holds its manifest beside the snapshot
 * files (lib/template/); a restore maps a template's memory from the
 * template memory cache. */
#define COVE_TEMPLATE_FILE "template.json"

/* Starts a sandbox from a snapshot directory.  Of cfg only vmm, name,
 * hostname (NULL: the sandbox's name, so restored copies tell themselves
 * apart), console_log, detached and boot_timeout_ms count: CPUs, memory and
 * disks come from the snapshot, each disk continuing on a fresh overlay in
 * the sandbox's directory.  Returns once the agent has taken the restore
 * notice (new clock, hostname, entropy). */
int cove_restore(const struct cove_config *cfg, const char *snapshot_dir, struct cove_sandbox **out,
                 char *err, size_t errlen) __attribute__((warn_unused_result));

/* cove_net_set and cove_net_probe: lib/net/net_ctl.h. */

/* Replaces a running sandbox's credential rules (a rules file, read and
 * validated in full with its secrets first; nothing changes on an error):
 * cove-egress takes them for its next connection, the guest gets the
 * sandbox CA and the rules' env_vars, and the sandbox's directory the
 * rules (never values).  -EINVAL for bad input, -ENOTSUP without a network. */
int cove_net_proxy(struct cove_sandbox *sb, const char *rules_file, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* "off", "none", "rules", "open". */
const char *cove_net_mode_name(enum cove_net_mode mode);

/* One line: how a sandbox this process starts is confined (the jail,
 * docs/ARCHITECTURE.md).  0 for the full jail, 1 for seccomp and
 * no_new_privs only, -EINVAL for a bad $COVE_JAIL_IDS (out holds why). */
int cove_confinement(char *out, size_t len);

/* cove-vmm's counters and phase times as one JSON object (malloc'ed): the
 * control API's {"op":"stats"} reply (docs/protocol.md): KVM's per-vCPU
 * counters summed ("kvm": exits by reason), "times" (process start on
 * CLOCK_MONOTONIC, VM created, first KVM_RUN, guest init, in us since the
 * VMM started), "vmm_rss_kb" (outside guest RAM), disk bytes. */
int cove_vmm_stats(struct cove_sandbox *sb, char **json, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Detached processes and file requests: lib/agent/proc.h. */

/* ---- the VMM pool (lib/vmm/pool.c; docs/ARCHITECTURE.md, "The VMM pool") ----
 * Members are cove-vmm processes started with --pool CPUS: exec'd inside
 * their namespaces and cgroup, with a per-sandbox jail uid, KVM VM, vCPUs
 * and I/O loop made and no guest memory.  Each serves one sandbox, never
 * a second.  A background thread keeps `size` ready members per shape;
 * cove_vmm_pool_free ends every member that was not taken. */

/* Removes the template memory cache's copies whose original memory file
 * is gone or changed (lib/vmm/memcache.h); cove template rm does it itself. */
void cove_memcache_prune(void);

/* Starts the pool and its refill thread (members come up in the
 * background).  0, or -errno with one line in err (bad options). */
int cove_vmm_pool_new(const struct cove_vmm_pool_opts *o, struct cove_vmm_pool **out, char *err,
                      size_t errlen) __attribute__((warn_unused_result));
void cove_vmm_pool_stats(struct cove_vmm_pool *p, struct cove_vmm_pool_stats *s);
/* Waits up to timeout_ms until every shape has size ready members: true
 * when it has (for tests and benchmarks). */
bool cove_vmm_pool_wait_full(struct cove_vmm_pool *p, unsigned int timeout_ms);
/* Stops refilling and ends every member not taken (their directories,
 * uid claims and cgroups go too).  Safe on NULL. */
void cove_vmm_pool_free(struct cove_vmm_pool *p);

#endif
