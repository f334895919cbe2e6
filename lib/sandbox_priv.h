/* libcove internals shared by its files. */
#ifndef COVE_SANDBOX_PRIV_H
#define COVE_SANDBOX_PRIV_H

#include <limits.h>
#include <stdarg.h>

#include "cove.h"
#include "errf.h"

#define SANDBOX_DIR_MAX 90

struct cove_sandbox {
	/* Unix socket paths are at most 107 bytes and the VMM appends
	 * "_<port>" to the vsock path, so the directory is kept short. */
	char dir[SANDBOX_DIR_MAX];       /* runtime directory, removed at stop */
	char vsock[SANDBOX_DIR_MAX + 8]; /* the VMM's hybrid-vsock Unix socket */
	pid_t pid;                       /* cove-vmm */
	int pidfd;                       /* readable when cove-vmm exits */
	bool stopped;
	int vmm_status; /* wait status once reaped */
};

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

#endif
