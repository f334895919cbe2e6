/* cove-vmm's control socket (--api PATH): a Unix stream socket served by
 * its own thread, the API thread (a poll loop with its own seccomp filter;
 * a connection has 10 s to send each whole request line).  One JSON object per line each way (docs/protocol.md,
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

#include "base/seccomp.h"

struct vm;
struct vmm_api;

/* Binds path mode 0600 (replacing a stale socket, refusing one a live VMM
 * holds) and opens /proc/self/smaps for the stats op; no thread yet.  Call
 * before any jail or filter: it needs the file system. */
int vmm_api_create(struct vm *vm, const char *path, struct vmm_api **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* A pooled VMM (vmm/pool.h): the listening socket, where the start
 * request comes before the API thread exists; and, once its directory was
 * moved to the sandbox's and the VM built, the socket's new path (removed
 * at exit) and the VM the ops act on.  -ENAMETOOLONG for a path too long. */
int vmm_api_listen_fd(const struct vmm_api *a);
int vmm_api_moved(struct vmm_api *a, struct vm *vm, const char *path)
    __attribute__((warn_unused_result));

/* Starts the API thread under the API filter (mode).  Call after
 * vm_start(): its ops pause, snapshot and stop a running VM.  A snapshot
 * parks the I/O loop (evloop_park) while it runs, as it swaps the disks
 * under the devices; the other ops use the thread-safe vm_* calls. */
int vmm_api_start(struct vmm_api *a, enum vmm_seccomp_mode mode, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Ends and joins the API thread (if started), closes its connections and
 * removes the socket file.  Call before the I/O loop stops; safe on NULL. */
void vmm_api_destroy(struct vmm_api *a);

/* Handles one request line (NUL-terminated, no newline) and writes the
 * reply line (NUL-terminated, with newline) into out.  Exposed for tests
 * and fuzzing; with vm NULL every operation fails cleanly.  passed is an
 * fd that came with the request (a snapshot directory) or -1; the caller
 * closes it. */
void vmm_api_handle(struct vm *vm, const char *line, int passed, char *out, size_t outlen);

#endif
