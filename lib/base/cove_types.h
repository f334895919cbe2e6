/* The public API's types (cove.h): the configuration, the network
 * policy, exec's options and results, detached processes, the pools.  The
 * rooms below lib/ use them without seeing cove.h's operations. */
#ifndef COVE_BASE_TYPES_H
#define COVE_BASE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A sandbox's name: 1 to COVE_NAME_MAX of [A-Za-z0-9_.-], not starting
 * with '.' (cove.h, "Named sandboxes"). */
#define COVE_NAME_MAX 32

/* A sandbox's network (docs/network.md): without one
 * (COVE_NET_OFF) it has no NIC at all.  Otherwise the guest's eth0 reaches
 * the world only through its own network namespace, where cove-egress
 * enforces the policy: NONE denies everything (DNS included), RULES
 * allows what the allow rules match minus the deny rules, OPEN allows
 * everything that is not always denied (the host, other sandboxes,
 * private and metadata ranges) minus the deny rules.  Networking needs
 * root (the veth, NAT and nftables rules live in the host's network
 * namespace). */
enum cove_net_mode {
	COVE_NET_OFF = 0,
	COVE_NET_NONE,
	COVE_NET_RULES,
	COVE_NET_OPEN,
};

/* Rules: allow `IP`, `CIDR`, `CIDR:PORT`, `CIDR:LO-HI`, `NAME`, `*.NAME`,
 * `NAME:PORT`; deny CIDR rules only (a domain deny is easy to bypass).
 * A CIDR deny beats any allow.  Lists are NULL-terminated, or NULL. */
struct cove_net_policy {
	enum cove_net_mode mode;
	const char *const *allow;
	const char *const *deny;
};

#define COVE_NET_RULES_MAX 256 /* rules per list */

struct cove_config {
	const char *vmm;              /* cove-vmm binary */
	const char *kernel;           /* guest kernel (vmlinux or bzImage) */
	const char *image;            /* root file system image (ext4): the read-only base
	                                 of the sandbox's own qcow2 overlay */
	unsigned int cpus;            /* 0: 1 (COVE_CPUS_DEFAULT); at most 64 (COVE_CPUS_MAX) */
	uint64_t memory_mib;          /* 0: 256 (COVE_MEMORY_DEFAULT_MIB); at least 32
	                                 (COVE_MEMORY_MIN_MIB); common/cove_limits.h */
	const char *cmdline;          /* extra kernel command line, or NULL */
	const char *hostname;         /* guest hostname, or NULL for "cove" */
	const char *console_log;      /* where the guest console goes; NULL: the sandbox dir */
	unsigned int boot_timeout_ms; /* until the agent answers; default 60000 */
	const char *name; /* registry name (see cove_open), or NULL: anonymous sb-XXXXXX */
	bool detached;    /* cove-vmm outlives this process; cove_free leaves it running.
	                     Not detached, it dies with the thread that started it
	                     (PR_SET_PDEATHSIG follows the thread, not the process) */
	/* Host-enforced limits (0: none or the default); a restore takes the
	 * snapshot's (its note, cove-sandbox.json) for each one left 0 here. */
	double cpu_quota;   /* CPU time, in CPUs (cgroup cpu.max; 0.5: half of one);
	                       apart from cpus, the vCPU count */
	uint64_t pids_max;  /* cgroup pids.max of cove-vmm */
	uint64_t disk_size; /* root disk's virtual size in bytes (the overlay's; the
	                       guest's ext4 grows to it at boot); 0: the image's;
	                       never smaller than the image.  Boot only */
	uint64_t disk_bps;  /* root disk bytes/s (reads and writes), token bucket */
	uint64_t disk_iops; /* root disk requests/s */
	uint64_t ttl_s;     /* lifetime: cove-vmm stops the sandbox this many seconds
	                       after it started, however wedged the guest; a restore
	                       starts a fresh ttl of the same length */
	/* Networking (mode COVE_NET_OFF: none, no NIC).  A restore keeps the
	 * snapshot's policy and net limits unless net.mode is set here. */
	struct cove_net_policy net;
	const char *const *net_publish; /* "[ADDR:]HOSTPORT:GUESTPORT" (TCP): a host
	                                   port (127.0.0.1 by default) forwarded to
	                                   a guest port; NULL-terminated or NULL */
	const char *const *net_dns;     /* upstream resolvers "IP[:PORT]"; NULL:
	                                   $COVE_DNS_UPSTREAM, else the host's
	                                   /etc/resolv.conf (loopback skipped) */
	const char *net_limits;         /* "rx_bps=N,tx_bps=N,rx_pps=N,tx_pps=N[,..._burst=N]":
	                                   virtio-net rate limits, or NULL */
	const char *egress;             /* cove-egress binary (found as vmm is) */
	/* Credential injection (issue 15): a rules file (common/proxyrule.h),
	 * read with every secret it names before anything starts; needs a
	 * network.  A restore re-reads the snapshot's copy unless set here. */
	const char *proxy_rules;
	/* Networks set up ahead of time (cove_net_pool_new), or NULL: a
	 * sandbox with a network takes one of its slots instead of making
	 * its namespace and cove-egress now, where it can (not with
	 * net_publish, nor with DNS upstreams other than the pool's). */
	struct cove_net_pool *net_pool;
	/* A pool of pre-spawned cove-vmm processes (cove_vmm_pool_new, coved's
	 * pool_size): a detached cove_start or cove_restore takes a member of
	 * its vCPU count from it instead of spawning one (a sandbox's TAP goes
	 * with the start request).  NULL: spawn, as always. */
	struct cove_vmm_pool *vmm_pool;
	/* cove_restore: which restores map their memory from the template
	 * memory cache (lib/vmm/memcache.h): COVE_MEMCACHE_TEMPLATES (0, the
	 * default) a template's, COVE_MEMCACHE_ALL every snapshot's (a
	 * snapshot restored many times: benchmarks, forks), COVE_MEMCACHE_NONE
	 * none. */
	enum { COVE_MEMCACHE_TEMPLATES, COVE_MEMCACHE_ALL, COVE_MEMCACHE_NONE } memcache;
};

/* Networks made ahead of time (lib/net/net_pool.c; cove.h). */
#define COVE_NET_POOL_MAX 64
struct cove_net_pool;
struct cove_net_pool_stats {
	unsigned int size, ready;
	unsigned int hits, misses; /* takes served from a slot, and not */
	unsigned int failures;     /* slots the filler failed to make */
	char last_error[256];      /* why the last one failed, or "" */
};

struct cove_sandbox;

/* Output of an execution arrives through these, on the calling thread. */
typedef void (*cove_output_fn)(void *opaque, const void *data, size_t len);

struct cove_exec_opts {
	const char *const *argv; /* NULL-terminated, required */
	const char *const *env;  /* "K=V" strings, NULL-terminated, or NULL */
	const char *cwd;         /* NULL: the sandbox's default (cove_set_exec_defaults) */
	/* NULL: the sandbox's default user (root unless set); else "root", a
	 * name, a uid, "name:group" or "uid:gid", resolved in the guest from
	 * its /etc/passwd and /etc/group */
	const char *user;
	uint64_t timeout_ms; /* 0: none; on expiry the process group is killed; at most
	                        COVE_TIMEOUT_MAX_MS.  The host gives up 3 s later
	                        (-ETIMEDOUT) if the agent has not answered */
	bool pty;            /* run under a pseudo-terminal */
	uint16_t rows, cols; /* PTY window size */
	int stdin_fd;        /* forwarded until EOF; -1: no input */
	cove_output_fn on_stdout, on_stderr;
	void *opaque;
	/* PTY mode: polled after every wake-up; return true and fill rows/cols
	 * to send a window size change.  May be NULL. */
	bool (*resize)(void *opaque, uint16_t *rows, uint16_t *cols);
	/* Set by a signal handler to forward a signal to the process group.
	 * cove_exec then waits at most 0.5 s more for the command's end and
	 * otherwise returns -EINTR (a frozen guest never answers). */
	volatile int *pending_signal;
};

/* What every later exec and detached process in a sandbox gets unless it
 * gives its own (cove_set_exec_defaults): the agent keeps them, so a
 * snapshot taken afterwards (a template's) hands them to its restores. */
struct cove_exec_defaults {
	const char *const *env; /* "K=V", NULL-terminated, or NULL; under an exec's own env;
	                           at most COVE_DEFAULTS_ENV_MAX, values up to
	                           COVE_DEFAULTS_VALUE_MAX bytes */
	const char *cwd;        /* absolute, or NULL: "/root", else "/" */
	const char *user;       /* as cove_exec_opts' user, or NULL: root */
};

#define COVE_DEFAULTS_ENV_MAX   256
#define COVE_DEFAULTS_VALUE_MAX (32 * 1024)

/* The protocol's limit on timeout_ms (2^42 ms, about 139 years). */
#define COVE_TIMEOUT_MAX_MS ((uint64_t)1 << 42)

struct cove_exec_result {
	int exit_code; /* valid when signal == 0 */
	int signal;    /* the signal that killed it, or 0 */
	bool timed_out;
};

/* cove_get_file's size limit (cove_get_file_max takes one). */
#define COVE_GET_MAX_DEFAULT ((uint64_t)4 << 30)

/* Detached processes (lib/agent/proc.c; cove.h). */
struct cove_proc_spec {
	const char *const *argv; /* NULL-terminated, required */
	const char *const *env;  /* "K=V", NULL-terminated, or NULL */
	const char *cwd;         /* NULL: the sandbox's default */
	const char *user;        /* NULL: the sandbox's default; as cove_exec_opts' */
	const char *tag;         /* NULL: none; at most 256 bytes */
	bool stdin_open;         /* false: stdin is /dev/null */
	bool pty;
	uint16_t rows, cols; /* pty size; 0: 24x80 */
	uint64_t timeout_ms; /* 0: none; the agent kills the group then */
};

enum cove_proc_ev { COVE_PROC_IDLE, COVE_PROC_STDOUT, COVE_PROC_STDERR, COVE_PROC_EXIT };
struct cove_proc_event {
	enum cove_proc_ev kind;
	uint8_t *data; /* STDOUT/STDERR: malloc'ed bytes (the caller frees) */
	size_t len;
	int exit_code, signal; /* EXIT */
	bool timed_out;
};

/* The VMM pool (lib/vmm/pool.c; cove.h). */
#define COVE_POOL_SHAPES_MAX 8
#define COVE_POOL_SIZE_MAX   64

struct cove_vmm_pool;

struct cove_vmm_pool_opts {
	const char *vmm;   /* cove-vmm binary (cove_config_defaults' vmm) */
	unsigned int size; /* ready members per shape, 1..COVE_POOL_SIZE_MAX */
	unsigned int cpus[COVE_POOL_SHAPES_MAX]; /* the shapes: vCPU counts */
	unsigned int nshapes;
};

struct cove_vmm_pool_stats {
	unsigned int size;    /* the target per shape */
	unsigned int ready;   /* members waiting now, all shapes */
	uint64_t hits;        /* starts served by a member */
	uint64_t misses;      /* starts that found no member of their shape */
	uint64_t spawned;     /* members started */
	uint64_t failed;      /* member starts that failed */
	char last_error[256]; /* the last failure, or "" */
};

#endif
