/* The guest's side of a restore from a snapshot: many forks of one snapshot
 * wake with the same clock, host name and, worst, the same kernel random
 * state.  The host's RESTORED notice (docs/protocol.md) makes each one its
 * own: clock, host name, sandbox id, fresh entropy. */
#ifndef COVE_AGENT_RESTORE_H
#define COVE_AGENT_RESTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"

#define AGENT_RUN_DIR         "/run/cove"
#define AGENT_SANDBOX_ID_FILE "sandbox-id" /* in AGENT_RUN_DIR */
#define AGENT_HOSTNAME_FILE   "/etc/hostname"

struct agent_restore_result {
	bool reseeded;        /* the kernel's CRNG was reseeded after the new input */
	uint32_t hwrng_bytes; /* always 0: kept in the answer for older hosts */
};

/* The agent_config.restored hook (opaque unused): in order, sets
 * CLOCK_REALTIME to req->time_ns; sets the host name and rewrites
 * /etc/hostname if that file is writable; writes the sandbox id to
 * /run/cove/sandbox-id (creating /run/cove); adds the seed to the kernel's
 * input pool (RNDADDENTROPY, credited) and reseeds the CRNG (RNDRESEEDCRNG), so
 * /dev/urandom and getrandom() differ between forks from then on.  Needs
 * root (CAP_SYS_TIME, CAP_SYS_ADMIN).  Every step is tried even when an
 * earlier one failed; the first failure of the clock, host name or sandbox
 * id is returned (-errno, message in err).  Entropy problems only show in
 * res->reseeded: without CAP_SYS_ADMIN the bytes are still mixed in
 * (uncredited) by writing them to /dev/urandom. */
int agent_restore_apply(void *opaque, const struct agent_restore_req *req,
                        struct agent_restore_result *res, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The steps that only touch files, with their paths open for tests. */

/* Writes "<id>\n" to dir/AGENT_SANDBOX_ID_FILE through a temporary file and
 * a rename (readers never see half an id), creating dir (0755) if needed.
 * 0 or -errno. */
int agent_write_sandbox_id(const char *dir, const char *id) __attribute__((warn_unused_result));

/* Replaces the contents of an existing file at path with "<name>\n".
 * 1 when written, 0 when there is nothing to do (no such file, or it is
 * not writable: read-only root, permissions), -errno when the write failed
 * part-way. */
int agent_write_hostname_file(const char *path, const char *name)
    __attribute__((warn_unused_result));

#endif
