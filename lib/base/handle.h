/* The sandbox handle (struct cove_sandbox, cove.h's opaque type) and its
 * paths: the runtime directory (registry entry), the jail root, the VMM's
 * sockets.  Every room of libcove that works on a sandbox takes it. */
#ifndef COVE_BASE_HANDLE_H
#define COVE_BASE_HANDLE_H

#include "lib/base/cove_types.h"
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/base/jail.h"
#include "lib/base/registry.h"
#include "lib/base/sandbox_net.h"

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
	/* The --ttl watchdog (lib/vmm/limits.c): kills a cove-vmm that outlives its
	 * deadline (it stops itself at it unless it is stopped or wedged). */
	uint64_t ttl_s;
	int ttl_stop_fd; /* eventfd that ends the watchdog; -1: none */
	pthread_t ttl_thread;
	bool ttl_killed;        /* written by the watchdog before it ends (atomic) */
	struct sandbox_net net; /* net.on: it has a network (sandbox_net.h) */
	/* vmm_spawn of a pool member (lib/vmm/pool.c): started at the lowest CPU
	 * priority (nice 19) when we are root, so that refilling the pool
	 * yields to running sandboxes; the VMM takes priority 0 back itself
	 * when its start request comes. */
	bool pool_member;
	/* The restore notice in flight (lib/agent/notice.c): sent on notice_fd, its
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
	/* The working-set record to take after the first exec (lib/vmm/prefetch.c). */
	bool ws_record;
	uint64_t ws_ram;
	char ws_dir[PATH_MAX];
	/* What takes it (prefetch_take, set by prefetch_plan): cove_exec calls
	 * it after the first exec without seeing the VMM room. */
	int (*ws_take)(struct cove_sandbox *sb, char *err, size_t errlen);
};

/* 0 for a valid sandbox name (cove_name_valid), else -EINVAL with the
 * rules in err. */
int sandbox_check_name(const char *name, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* A zeroed handle (no pidfd yet); NULL when out of memory. */
struct cove_sandbox *sandbox_new(bool detached);

/* Sets sb's runtime directory <base>/<name> and the socket paths in it. */
void sandbox_paths(struct cove_sandbox *sb, const char *base, const char *name);

/* ---- part of cove.h's API ---- */

/* The sandbox's runtime directory and cove-vmm's pid. */
const char *cove_sandbox_dir(const struct cove_sandbox *sb);
pid_t cove_vmm_pid(const struct cove_sandbox *sb);

/* Whether name is a valid sandbox name (above). */
bool cove_name_valid(const char *name);

/* The sandbox's registry name (anonymous ones have their sb-XXXXXX). */
const char *cove_sandbox_name(const struct cove_sandbox *sb);

#endif
