/* The restore notice (notice.c): a restored sandbox's agent is told who
 * it is now (cove_agent_restored); the notice may stay in flight while the
 * first exec goes out behind it on the same connection. */
#ifndef COVE_AGENT_NOTICE_H
#define COVE_AGENT_NOTICE_H

#include "lib/base/cove_types.h"
#include <stddef.h>
#include <stdint.h>

#include "lib/base/handle.h"

struct proto_hdr;

/* cove_agent_restored() on an agent connection already open (fd >= 0,
 * left open), or on a new one (fd < 0). */
int cove_agent_restored_on(struct cove_sandbox *sb, int fd, const char *hostname,
                           const char *sandbox_id, char *err, size_t errlen);

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

/* ---- part of cove.h's API ---- */

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

#endif
