/* cove-vmm's control socket (--api PATH): a Unix stream socket served on
 * the VM's I/O loop.  One JSON object per line each way (docs/protocol.md,
 * "VMM control API"):
 *
 *   {"op":"status"}                      -> {"ok":true,"state":"running"|"paused"}
 *   {"op":"pause"} / {"op":"resume"}     -> {"ok":true}
 *   {"op":"snapshot","dir":"/abs","then":"resume"|"stop"}
 *        -> {"ok":true,"memory_bytes":N,"memory_disk_bytes":N,"state_bytes":N,"ms":N}
 *   {"op":"stats"}  -> {"ok":true,"kvm":{"exits":N,"io_exits":N,...},
 *                       "vmm_rss_kb":N,"guest_rss_kb":N,"disk_read_bytes":N,...}
 *   {"op":"stop"}                        -> {"ok":true}, then the VMM ends
 *   anything else                        -> {"ok":false,"error":"..."}
 *
 * Requests from a local user who can reach the socket are trusted to the
 * extent of that user (it is created 0600); they are still parsed as
 * untrusted input. */
#ifndef COVE_VMM_API_H
#define COVE_VMM_API_H

#include <stddef.h>

struct vm;
struct vmm_api;

/* Binds path (replacing a stale socket, refusing one a live VMM holds)
 * and watches it on vm's I/O loop. */
int vmm_api_create(struct vm *vm, const char *path, struct vmm_api **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Call with the I/O loop stopped; removes the socket file. */
void vmm_api_destroy(struct vmm_api *a);

/* Handles one request line (NUL-terminated, no newline) and writes the
 * reply line (NUL-terminated, with newline) into out.  Exposed for tests
 * and fuzzing; with vm NULL every operation fails cleanly.  passed is an
 * fd that came with the request (a snapshot directory) or -1; the caller
 * closes it. */
void vmm_api_handle(struct vm *vm, const char *line, int passed, char *out, size_t outlen);

#endif
