/* cove-vmm's control socket (vmm_api.c). */
#ifndef COVE_LIB_VMM_API_H
#define COVE_LIB_VMM_API_H

#include "lib/base/cove_types.h"
#include <stdbool.h>
#include <stddef.h>

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

/* ---- part of cove.h's API ---- */

/* cove-vmm's counters and phase times as one JSON object (malloc'ed): the
 * control API's {"op":"stats"} reply (docs/protocol.md): KVM's per-vCPU
 * counters summed ("kvm": exits by reason), "times" (process start on
 * CLOCK_MONOTONIC, VM created, first KVM_RUN, guest init, in us since the
 * VMM started), "vmm_rss_kb" (outside guest RAM), disk bytes. */
int cove_vmm_stats(struct cove_sandbox *sb, char **json, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
