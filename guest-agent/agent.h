/* cove-agent's connection handler: one host connection, served until the
 * host closes it.  main.c owns the PID 1 duties and the vsock listener; this
 * part only needs a connected stream socket, so the unit tests run it over
 * socketpair(AF_UNIX) on the host. */
#ifndef COVE_AGENT_H
#define COVE_AGENT_H

#include <stddef.h>

#include "restore.h"

struct agent_config {
	/* Called on the connection's thread once the OK reply to SHUTDOWN has
	 * been sent; it may not return.  NULL: SHUTDOWN answers ERROR EPERM. */
	void (*shutdown)(void *opaque);
	/* Applies a RESTORED notice on the connection's thread: 0 with *res
	 * filled (answered OK), or -errno with a message in err (answered
	 * ERROR; the connection goes on).  NULL: RESTORED answers ERROR EPERM.
	 * The agent uses agent_restore_apply() (restore.h); tests fake it, as
	 * the real one changes the clock and host name of the machine. */
	int (*restored)(void *opaque, const struct agent_restore_req *req,
	                struct agent_restore_result *res, char *err, size_t errlen);
	void *opaque;
};

/* Serves the requests on fd, a connected stream socket, one after another,
 * until the peer closes (0) or the connection fails or breaks the protocol
 * (negative errno, after an ERROR frame where one could be sent).  Switches
 * fd to O_NONBLOCK and leaves closing it to the caller.  Processes that an
 * EXEC started and that are still running when the connection ends are
 * killed (their whole process group).
 *
 * Preconditions: SIGPIPE is ignored (output to an exec's stdin that has gone
 * away must be EPIPE); fds 0-2 are open (so the pipes handed to children
 * never take those numbers).  Safe to run on many threads at once.  The
 * result is for tests and logs: the connection is over either way. */
int agent_serve_conn(int fd, const struct agent_config *cfg);

#endif
