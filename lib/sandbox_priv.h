/* libcove internals shared by its files. */
#ifndef COVE_SANDBOX_PRIV_H
#define COVE_SANDBOX_PRIV_H

#include <limits.h>
#include <stdarg.h>

#include "cove.h"
#include "errf.h"
#include "registry.h"

#define SANDBOX_DIR_MAX  90
#define SANDBOX_API_SOCK "api.sock"

struct cove_sandbox {
	/* Unix socket paths are at most 107 bytes and the VMM appends
	 * "_<port>" to the vsock path, so the directory is kept short. */
	char dir[SANDBOX_DIR_MAX];        /* runtime directory (registry entry), removed at stop */
	char vsock[SANDBOX_DIR_MAX + 8];  /* the VMM's hybrid-vsock Unix socket */
	char api[SANDBOX_DIR_MAX + 10];   /* the VMM's control socket */
	char name[REGISTRY_NAME_MAX + 1]; /* the entry's name: dir's last component */
	pid_t pid;                        /* cove-vmm */
	int pidfd;                        /* readable when cove-vmm exits */
	bool child;                       /* cove-vmm is our child: reaped through the pidfd */
	bool detached; /* cove_free leaves it running (detached start, cove_open) */
	bool stopped;
	int vmm_status; /* wait status once reaped (children only) */
};

/* Waits up to grace_ms for cove-vmm to exit, then sends SIGTERM and at
 * last SIGKILL; closes the pidfd and removes the runtime directory.  The
 * end of cove_stop, and of a snapshot that stops the sandbox. */
void sandbox_finish(struct cove_sandbox *sb, int grace_ms);

/* One request to cove-vmm's control socket sock (req is consumed).  An
 * {"ok": false} answer becomes -EIO with its "error" in err; on success
 * the whole answer is returned through reply (when not NULL). */
struct json_t;
int vmm_api_call(const char *sock, struct json_t *req, struct json_t **reply, int timeout_ms,
                 char *err, size_t errlen);

/* Asks cove-vmm whether the VM is paused (a short timeout: `cove ls`). */
int vmm_api_paused(const char *sock, bool *paused);

/* The CPUs and memory a snapshot was taken with, from the note libcove
 * leaves beside it; 0 when unknown. */
void snapshot_note_read(const char *snapdir, unsigned int *cpus, uint64_t *memory_mib);

/* snprintf into err; returns code (negative errno) for `return cove_fail(...)`. */
#define cove_fail errf

/* Opens a stream to the guest agent through the VMM's Unix socket
 * (Firecracker's hybrid vsock: "CONNECT <port>\n" -> "OK <hostport>\n").
 * Returns the fd or -errno. */
int cove_agent_connect(struct cove_sandbox *sb, char *err, size_t errlen);

/* Sends one JSON request (a jansson object, consumed). */
struct json_t;
int cove_send_json(int fd, uint16_t type, struct json_t *obj, char *err, size_t errlen);

/* Reads frames until one of type want (or ERROR, turned into a message);
 * returns its payload (malloc'ed, NUL-terminated) through *payload. */
int cove_expect(int fd, uint16_t want, uint8_t **payload, uint32_t *len, char *err, size_t errlen);

/* cove_agent_restored() on an agent connection already open (fd >= 0,
 * left open), or on a new one (fd < 0). */
int cove_agent_restored_on(struct cove_sandbox *sb, int fd, const char *hostname,
                           const char *sandbox_id, char *err, size_t errlen);

#endif
