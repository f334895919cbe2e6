/* Talking to cove-agent (agent_client.c): connections that first wait for
 * a restore notice in flight, and the file transfers of cove.h. */
#ifndef COVE_AGENT_CLIENT_H
#define COVE_AGENT_CLIENT_H

#include "lib/base/cove_types.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/agent/conn.h"
#include "lib/base/handle.h"

/* A connection to the agent (conn.h's agent_connect_unsettled) once a
 * restore notice in flight has its answer, within AGENT_STEP_MS
 * (agent_connect_until: by deadline, mono_ms()).  agent_connect_cancel
 * also gives up (-EINTR) once *cancel (a signal number set by a handler)
 * is non-zero; cancel may be NULL. */
int cove_agent_connect(struct cove_sandbox *sb, char *err, size_t errlen);
int agent_connect_until(struct cove_sandbox *sb, int64_t deadline, char *err, size_t errlen);
int agent_connect_cancel(struct cove_sandbox *sb, int64_t deadline, volatile int *cancel, char *err,
                         size_t errlen);

/* One request (req, a jansson object, consumed) answered by OK: *reply
 * its object (a new reference; reply may be NULL); the agent's ERROR
 * becomes -errno and its message. */
struct json_t;
int agent_request(struct cove_sandbox *sb, uint16_t type, struct json_t *req, struct json_t **reply,
                  char *err, size_t errlen) __attribute__((warn_unused_result));

/* ---- part of cove.h's API ---- */

/* True for a user spec's syntax (cove_exec_opts.user): 1..COVE_USER_MAX
 * printable bytes without spaces, at most one ':' with something on
 * either side.  Whether the user exists is the guest's question. */
#define COVE_USER_MAX 256
bool cove_user_valid(const char *user);

/* Streams a local file into the guest (atomically replaced there). */
int cove_put_file(struct cove_sandbox *sb, const char *local, const char *guest, uint32_t mode,
                  char *err, size_t errlen) __attribute__((warn_unused_result));
/* cove_put_file with the guest file's owner: uid, gid -1 leave it root's
 * (the agent's); mode 0 takes the local file's. */
int cove_put_file_owned(struct cove_sandbox *sb, const char *local, const char *guest,
                        uint32_t mode, long uid, long gid, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* mkdir path (absolute) with mode; parents: mkdir -p (existing folders are
 * fine).  uid, gid (-1: unchanged) go to every folder it makes and to the
 * last one even when it was there. */
int cove_mkdir(struct cove_sandbox *sb, const char *path, uint32_t mode, long uid, long gid,
               bool parents, char *err, size_t errlen) __attribute__((warn_unused_result));
/* ln -sf target path (path absolute; a file or link there is replaced, a
 * folder is not), then lchown to uid, gid (-1: unchanged). */
int cove_symlink(struct cove_sandbox *sb, const char *target, const char *path, long uid, long gid,
                 char *err, size_t errlen) __attribute__((warn_unused_result));
/* Resolves a user spec (cove_exec_opts' user) in the guest, from its
 * /etc/passwd and /etc/group as an exec would: *uid, and *gid the given
 * group's or the user's primary one (a uid without an entry: the same
 * number).  For chown-like steps (a Dockerfile's COPY --chown).  -EINVAL
 * with "user 'bob' is not in /etc/passwd" for an unknown one. */
int cove_user_lookup(struct cove_sandbox *sb, const char *user, long *uid, long *gid, char *err,
                     size_t errlen) __attribute__((warn_unused_result));
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
/* cove_ping with every step by deadline (mono_ms()): -ETIMEDOUT after it. */
int cove_ping_until(struct cove_sandbox *sb, int64_t deadline, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
