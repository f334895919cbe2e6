/* PROTO_PORT: an agent connection turned into a guest port's stream. */
#include "lib/agent/port.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/agent/agent_client.h"
#include "lib/agent/conn.h"
#include "proto.h"

int cove_port_on(int fd, unsigned int port, unsigned int connect_ms, int64_t deadline, char *err,
                 size_t errlen)
{
	if (port < 1 || port > 65535)
		return errf(err, errlen, -EINVAL, "port %u is not 1-65535", port);
	if (connect_ms == 0)
		connect_ms = COVE_PORT_CONNECT_MS;
	if (connect_ms > 60000)
		return errf(err, errlen, -EINVAL, "a port's connect deadline is at most 60000 ms");
	char req[64];
	int n = snprintf(req, sizeof(req), "{\"port\":%u,\"timeout_ms\":%u}", port, connect_ms);
	int64_t t0 = mono_ms();
	int r = proto_send_until(fd, PROTO_PORT, 0, req, (uint32_t)n, deadline);
	if (r == -ETIMEDOUT)
		return agent_timeout(t0, err, errlen);
	if (r < 0)
		return errf(err, errlen, r, "sending to the agent: %s", strerror(-r));
	/* The answer is one frame: its reader takes no byte past it, so
	 * whatever the server says first stays in fd for the caller. */
	return cove_expect_until(fd, PROTO_OK, NULL, NULL, deadline, err, errlen);
}

int cove_port_open(struct cove_sandbox *sb, unsigned int port, unsigned int connect_ms, char *err,
                   size_t errlen)
{
	if (port < 1 || port > 65535)
		return errf(err, errlen, -EINVAL, "port %u is not 1-65535", port);
	int64_t deadline =
	    mono_ms() + (connect_ms ? connect_ms : COVE_PORT_CONNECT_MS) + AGENT_STEP_MS;
	int fd = agent_connect_until(sb, deadline, err, errlen);
	if (fd < 0)
		return fd;
	int r = cove_port_on(fd, port, connect_ms, deadline, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}
