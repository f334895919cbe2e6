/* libcove's internals, shared by its files and by no one else (the public
 * API is cove.h).  Grouped by the file that defines them:
 *
 *   config.c        defaults, and what cove_start and cove_restore accept
 *   sandbox.c       the handle and its registry entry; cove_start, cove_stop
 *   vmm_proc.c      cove-vmm as a process: spawn, readiness, death, exit
 *   vmm_api.c       cove-vmm's control socket
 *   agent_client.c  connections and requests to the guest agent
 *   notice.c        the restore notice
 *
 * snapshot.c (cove_snapshot, cove_restore), lookup.c (cove_open,
 * cove_list) and exec.c (cove_exec) use these and add none of their own. */
#ifndef COVE_LIBCOVE_H
#define COVE_LIBCOVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cove.h"
#include "errf.h"
#include "jail.h"
#include "net.h"
#include "registry.h"

#define SANDBOX_API_SOCK JAIL_ROOT_DIR "/api.sock" /* in the sandbox's directory */

struct cove_sandbox {
	char dir[REGISTRY_DIR_MAX];        /* runtime directory (registry entry), removed at stop */
	char root[REGISTRY_DIR_MAX + 6];   /* dir/root: the jail's root (disks, sockets) */
	char vsock[REGISTRY_DIR_MAX + 12]; /* the VMM's hybrid-vsock Unix socket */
	char api[REGISTRY_DIR_MAX + 16];   /* the VMM's control socket */
	char name[REGISTRY_NAME_MAX + 1];  /* the entry's name: dir's last component */
	pid_t pid;                         /* cove-vmm */
	int pidfd;                         /* readable when cove-vmm exits */
	bool child;                        /* cove-vmm is our child: reaped through the pidfd */
	bool detached; /* cove_free leaves it running (detached start, cove_open) */
	bool stopped;
	int vmm_status; /* wait status once reaped (children only) */
	struct sandbox_jail jail;
	/* The --ttl watchdog (limits.c): kills a cove-vmm that outlives its
	 * deadline (it stops itself at it unless it is stopped or wedged). */
	uint64_t ttl_s;
	int ttl_stop_fd; /* eventfd that ends the watchdog; -1: none */
	pthread_t ttl_thread;
	bool ttl_killed;        /* written by the watchdog before it ends (atomic) */
	struct sandbox_net net; /* net.on: it has a network (net.h) */
	/* vmm_spawn of a pool member (pool.c): started at the lowest CPU
	 * priority (nice 19) when we are root, so that refilling the pool
	 * yields to running sandboxes; the VMM takes priority 0 back itself
	 * when its start request comes. */
	bool pool_member;
	/* The restore notice in flight (notice.c): sent on notice_fd, its
	 * answer not read yet.  The first exec goes out behind it on the same
	 * connection; anything else that talks to the agent waits for the
	 * answer first.  notice_r: its outcome once known (< 0: every later
	 * agent request fails with notice_msg). */
	bool notice_pending;
	bool notice_taken;           /* a first exec has its connection (notice_take()) */
	pthread_mutex_t notice_lock; /* the notice_* fields; zeroed = initialized (glibc) */
	pthread_cond_t notice_cond;  /* notice_taken went false */
	int notice_fd;
	int64_t notice_deadline; /* mono_ms() by which its answer must come */
	int notice_r;
	char notice_msg[256];
	char notice_host[REGISTRY_NAME_MAX + 1];
	/* The working-set record to take after the first exec (prefetch.c). */
	bool ws_record;
	uint64_t ws_ram;
	char ws_dir[PATH_MAX];
};

/* ---- config.c ----------------------------------------------------------- */

/* What cove_start (boot) or cove_restore (!boot) needs before anything
 * is created: sizes within bounds (boot only: a restore takes them from the
 * snapshot), a usable /dev/kvm, the files cfg names, a valid name.  0, or
 * -errno with a message in err. */
int config_check(const struct cove_config *cfg, bool boot, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The sizes a sandbox may boot with (common/cove_limits.h), 0 meaning the
 * default: -EINVAL for memory below COVE_MEMORY_MIN_MIB or more than
 * COVE_CPUS_MAX CPUs, with cove-vmm's wording ("memory must be at least
 * 32 MiB, got 16"). */
int config_check_sizes(unsigned int cpus, uint64_t memory_mib, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Bounds of struct cove_config's limits (0 is always fine: none). */
#define CONFIG_CPU_QUOTA_MIN 0.01
#define CONFIG_PIDS_MIN      16 /* cove-vmm's own threads need a few */
#define CONFIG_PIDS_MAX      4194304
#define CONFIG_DISK_SIZE_MAX (64ULL << 40)
#define CONFIG_DISK_BPS_MIN  4096
#define CONFIG_RATE_MAX      (1ULL << 50)
#define CONFIG_TTL_MAX_S     (10ULL * 366 * 86400) /* cove-vmm's --ttl bound */

/* The limits of cfg within those bounds: 0, or -EINVAL with a one-line
 * message naming the limit ("ttl must be at most ..."). */
int config_check_limits(const struct cove_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* What a sandbox with a network needs of this host and process: root,
 * /dev/net/tun, cove-egress.  0, or -errno with one line. */
int config_check_net_host(const struct cove_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* cfg's boot timeout, or its default. */
unsigned int config_boot_timeout_ms(const struct cove_config *cfg);

/* ---- sandbox.c ---------------------------------------------------------- */

/* 0 for a valid sandbox name (cove_name_valid), else -EINVAL with the
 * rules in err. */
int sandbox_check_name(const char *name, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* A zeroed handle (no pidfd yet); NULL when out of memory. */
struct cove_sandbox *sandbox_new(bool detached);

/* Sets sb's runtime directory <base>/<name> and the socket paths in it. */
void sandbox_paths(struct cove_sandbox *sb, const char *base, const char *name);

/* Creates the registry entry: <base>/<name> (mkdir takes the name) or,
 * with name NULL, an anonymous <base>/sb-XXXXXX. */
int sandbox_create(struct cove_sandbox *sb, const char *name, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The entry's meta.json while we set the sandbox up (it names this
 * process, so nobody takes the entry for dead), then once cove-vmm runs
 * (from then on the entry lives with it).  m holds what the caller filled
 * in (cpus, image...). */
int sandbox_meta_begin(struct cove_sandbox *sb, struct registry_meta *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int sandbox_meta_vmm(struct cove_sandbox *sb, struct registry_meta *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Where cove-vmm's own output (log) and the guest console (console: cfg's
 * console_log, else the sandbox's directory) go; both PATH_MAX bytes. */
void sandbox_logs(const struct cove_sandbox *sb, const struct cove_config *cfg, char *console,
                  char *log);

/* The cgroup limits of a sandbox of cfg with these sizes: memory.max is
 * guest RAM plus CGROUP_VMM_OVERHEAD_MIB, pids.max the threads plus spare. */
void sandbox_limits(const struct cove_config *cfg, unsigned int cpus, uint64_t memory_mib,
                    struct cgroup_limits *l);

/* The network of a sandbox that has one (policy's mode not off, or
 * policy_json, a restore's recorded policy, not NULL): net_setup, then
 * m's net record, written to meta.json at once.  0 without a network. */
int sandbox_net_begin(struct cove_sandbox *sb, const struct cove_config *cfg,
                      const struct cove_net_policy *policy, const char *policy_json,
                      const char *limits, struct registry_meta *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Appends "--net fd=3[,limits]" to argv (at argc; arg holds the value)
 * when sb has a network; returns the new argc. */
int sandbox_net_args(const struct cove_sandbox *sb, const char **argv, int argc, char *arg,
                     size_t len);

/* After vmm_spawn: the TAP is cove-vmm's, our fd is closed. */
void sandbox_net_handed(struct cove_sandbox *sb);

/* Stops and frees a sandbox that failed to come up, detached or not. */
void sandbox_abort(struct cove_sandbox *sb);

/* Ends cove-vmm as vmm_reap(sb, grace_ms) does, then removes the runtime
 * directory.  The end of cove_stop, and of a snapshot that stops the
 * sandbox. */
void sandbox_finish(struct cove_sandbox *sb, int grace_ms);

/* ---- vmm_proc.c --------------------------------------------------------- */

/* The most arguments a caller gives vmm_spawn (the jail's are added). */
#define COVE_VMM_ARGS_MAX 48

/* The last non-empty line of a file (cove-vmm's log, the console),
 * however long, cut to fit out; "" when there is none. */
void vmm_log_tail(const char *path, char *out, size_t len);

/* The start log's first line: what confines sb (jail_describe). */
void vmm_log_confinement(const struct cove_sandbox *sb, const char *log);

/* Appends "cove: " and the formatted line to the VMM log at log. */
void vmm_log_line(const char *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A listening Unix socket at path: where the agent's HELLO arrives. */
int vmm_listen(const char *path);

/* Starts cove-vmm (argv, NULL-terminated) with its output appended to log:
 * our child, killed when we die, or detached (its own session, neither
 * dying with us nor staying our zombie).  Sets sb->pid and sb->pidfd. */
int vmm_spawn(char *const argv[], bool detached, const char *log, struct cove_sandbox *sb,
              char *err, size_t errlen) __attribute__((warn_unused_result));

/* Waits up to timeout_ms for the agent's HELLO on the listening socket lfd.
 * -ECHILD when cove-vmm dies first (its log's or console's last line in
 * err), -ETIMEDOUT. */
int vmm_wait_ready(struct cove_sandbox *sb, int lfd, unsigned int timeout_ms, const char *console,
                   const char *log, char *err, size_t errlen) __attribute__((warn_unused_result));

/* After a restore there is no HELLO: the agent was serving when the
 * snapshot was taken.  Polls for its answer, 1 ms apart, while watching
 * cove-vmm; returns the open connection, or -errno as vmm_wait_ready. */
int vmm_wait_agent(struct cove_sandbox *sb, unsigned int timeout_ms, const char *console,
                   const char *log, char *err, size_t errlen) __attribute__((warn_unused_result));

/* What a seccomp kill means, for messages. */
#define VMM_SECCOMP_KILLED                                                                     \
	"it made a system call its thread may not make (a cove-vmm bug, or an exploited VMM; " \
	"the kernel log has the call)"

/* Whether cove-vmm, our child, was killed by SIGSYS (a seccomp filter's
 * verdict); it is not reaped. */
bool vmm_killed_by_seccomp(struct cove_sandbox *sb);

/* Waits up to grace_ms for cove-vmm to exit, then sends SIGTERM (and
 * SIGCONT) and waits VMM_TERM_MS, then SIGKILL and VMM_KILL_MS (through the
 * pidfd, never to a reused pid); reaps a child and closes the pidfd.  A
 * no-op once the pidfd is closed. */
#define VMM_TERM_MS 3000
#define VMM_KILL_MS 2000
void vmm_reap(struct cove_sandbox *sb, int grace_ms);

/* ---- limits.c ----------------------------------------------------------- */

/* Records ttl_s and, for a sandbox that is not detached, starts a thread
 * that SIGKILLs cove-vmm through (a copy of) its pidfd if it still runs
 * ttl_s + TTL_GRACE_MS after now.  Call right after vmm_spawn().  A thread
 * that cannot start is not an error: cove-vmm enforces the ttl itself. */
#define TTL_GRACE_MS 3000
void ttl_watch(struct cove_sandbox *sb, uint64_t ttl_s);

/* Ends and joins the watchdog (a no-op without one). */
void ttl_unwatch(struct cove_sandbox *sb);

/* The virtual size of the root disk for cfg (the image's, or cfg's
 * disk_size, refused with a message when smaller than the image), and the
 * cove-vmm --disk options of its limits (",bps=N,iops=N,max_file=N"). */
int sandbox_disk_size(const struct cove_config *cfg, const char *image, uint64_t *size, char *err,
                      size_t errlen) __attribute__((warn_unused_result));
void sandbox_disk_limits(char *out, size_t len, uint64_t size, uint64_t bps, uint64_t iops);

/* ---- vmm_api.c ---------------------------------------------------------- */

/* One request to cove-vmm's control socket sock (req is consumed).  An
 * {"ok": false} answer becomes -EIO with its "error" in err; on success
 * the whole answer is returned through reply (when not NULL). */
struct json_t;
int vmm_api_call(const char *sock, struct json_t *req, struct json_t **reply, int timeout_ms,
                 char *err, size_t errlen);

/* vmm_api_call() that passes the fd pass (SCM_RIGHTS) with the request. */
int vmm_api_call_fd(const char *sock, struct json_t *req, int pass, struct json_t **reply,
                    int timeout_ms, char *err, size_t errlen);

/* Asks cove-vmm whether the VM is paused (a short timeout: `cove ls`). */
int vmm_api_paused(const char *sock, bool *paused);

/* ---- agent_client.c ----------------------------------------------------- */

/* Every step of a conversation with the agent has a deadline on the host:
 * a frozen guest (or VMM) costs a command this, never forever.  A step is
 * the connect handshake, sending one request, or one reply (for a file
 * transfer, each DATA frame: an inactivity deadline). */
#define AGENT_STEP_MS 10000

/* Opens a stream to the guest agent through the VMM's Unix socket
 * (Firecracker's hybrid vsock: "CONNECT <port>\n" -> "OK <hostport>\n"),
 * within AGENT_STEP_MS (agent_connect_until: by deadline, mono_ms()).
 * Returns the fd (blocking) or -errno: -ETIMEDOUT with "the sandbox did not
 * answer within N s". */
int cove_agent_connect(struct cove_sandbox *sb, char *err, size_t errlen);
int agent_connect_until(struct cove_sandbox *sb, int64_t deadline, char *err, size_t errlen);
/* agent_connect_until that also gives up (-EINTR) once *cancel (a signal
 * number set by a handler) is non-zero; cancel may be NULL. */
int agent_connect_cancel(struct cove_sandbox *sb, int64_t deadline, volatile int *cancel, char *err,
                         size_t errlen);

/* -ETIMEDOUT with "the sandbox did not answer within N s", N the seconds
 * since started (mono_ms()). */
int agent_timeout(int64_t started, char *err, size_t errlen);

/* Sends one JSON request (a jansson object, consumed), within
 * AGENT_STEP_MS. */
int cove_send_json(int fd, uint16_t type, struct json_t *obj, char *err, size_t errlen);

/* Reads frames until one of type want (or ERROR, turned into a message);
 * returns its payload (malloc'ed, NUL-terminated) through *payload.
 * Within AGENT_STEP_MS, or by deadline (mono_ms()) for cove_expect_until. */
int cove_expect(int fd, uint16_t want, uint8_t **payload, uint32_t *len, char *err, size_t errlen);
int cove_expect_until(int fd, uint16_t want, uint8_t **payload, uint32_t *len, int64_t deadline,
                      char *err, size_t errlen);

/* ---- notice.c ----------------------------------------------------------- */

/* cove_agent_restored() on an agent connection already open (fd >= 0,
 * left open), or on a new one (fd < 0). */
int cove_agent_restored_on(struct cove_sandbox *sb, int fd, const char *hostname,
                           const char *sandbox_id, char *err, size_t errlen);

/* ---- pool.c (the VMM pool; cove.h) -------------------------------------- */

struct pool_member;

/* A ready member of cpus vCPUs, or NULL (no pool, none of that shape
 * ready): counted as a hit or a miss. */
struct pool_member *pool_take(struct cove_vmm_pool *p, unsigned int cpus);
/* Step 1 of a hand-over: the member's root/ replaces sb's freshly made,
 * empty root (renameat2 RENAME_NOREPLACE), its vmm.log becomes log. */
int pool_adopt_root(struct pool_member *pm, struct cove_sandbox *sb, const char *log, char *err,
                    size_t errlen) __attribute__((warn_unused_result));
/* Step 2, where a spawn would call jail_prepare: sb gets the member's
 * process (pidfd) and jail; the uid claim names sb; the process moves to
 * sb's new cgroup with lim.  From here sandbox_finish ends the VMM. */
int pool_adopt_jail(struct pool_member *pm, struct cove_sandbox *sb,
                    const struct cgroup_limits *lim, const char *log, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Step 3, where a spawn would call vmm_spawn: the start request with
 * argv[1..] (vmm_spawn's argv) and the jail's flags; waits up to
 * timeout_ms for its answer (the guest runs, or why not). */
int pool_start(struct pool_member *pm, struct cove_sandbox *sb, char *const argv[],
               unsigned int timeout_ms, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Ends the member if it still has its process, removes what is left of its
 * directory; safe on NULL.  Called after pool_start too. */
void pool_member_free(struct pool_member *pm);
/* ---- prefetch.c ---------------------------------------------------------- */

/* After a restore from snapshot_dir (ram_bytes of guest RAM, 0: unknown):
 * whether the first exec should record the working set (none recorded
 * yet, the directory writable, COVE_PREFETCH is not 0). */
void prefetch_plan(struct cove_sandbox *sb, const char *snapshot_dir, uint64_t ram_bytes);

/* Takes the record planned (once): 0 also when none was planned. */
int prefetch_take(struct cove_sandbox *sb, char *err, size_t errlen);

struct proto_hdr;

/* A new agent connection that does not wait for a restore notice in
 * flight (notice.c's own retries). */
int agent_connect_unsettled(struct cove_sandbox *sb, int64_t deadline, char *err, size_t errlen);

/* An ERROR frame's {"errno","message"}: the message in err, -errno. */
int cove_error_frame(const uint8_t *payload, char *err, size_t errlen);

/* Sends the restore notice on fd (an open agent connection) and returns
 * without its answer: sb holds fd until notice_settle() or the first exec
 * (notice_take()).  The answer may take answer_ms (the restore's readiness
 * budget, as a boot's: a guest woken among many on a busy host is slow;
 * 0: AGENT_STEP_MS).  On failure fd is closed. */
int notice_begin(struct cove_sandbox *sb, int fd, const char *hostname, unsigned int answer_ms,
                 char *err, size_t errlen);

/* Waits for the answer of a notice in flight (nothing to do when none is),
 * retrying on a fresh connection when the restore's transport reset caught
 * it.  0, or the notice's failure (which every later call repeats). */
int notice_settle(struct cove_sandbox *sb, char *err, size_t errlen);

/* The connection of a notice in flight, for the caller to send its request
 * behind it and then read the notice's answer first (notice_answer()); -1
 * when no notice is in flight. */
int notice_take(struct cove_sandbox *sb);

/* Checks the first frame on a taken connection: the notice's answer.  On
 * failure it is also remembered in sb. */
int notice_answer(struct cove_sandbox *sb, const struct proto_hdr *h, const uint8_t *payload,
                  char *err, size_t errlen);

/* A taken connection failed before the notice's answer came (k < 0): the
 * notice is sent again, synchronously, on a fresh connection. */
void notice_lost(struct cove_sandbox *sb);

#endif
