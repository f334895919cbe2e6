/* PORT: a loopback TCP connection in the guest, joined to the host's. */
#include "port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bytepipe.h"
#include "clock.h"
#include "proto_json.h"

/* dial() - a connection to port on one loopback address, by deadline
 * (mono_ms()).  Return: the fd (blocking) or -errno. */
static int dial(int family, uint16_t port, int64_t deadline)
{
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *sa = (struct sockaddr_in *)&ss;
		sa->sin_family = AF_INET;
		sa->sin_port = htons(port);
		sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*sa);
	} else {
		struct sockaddr_in6 *sa = (struct sockaddr_in6 *)&ss;
		sa->sin6_family = AF_INET6;
		sa->sin6_port = htons(port);
		sa->sin6_addr = in6addr_loopback;
		len = sizeof(*sa);
	}
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int r = connect(fd, (struct sockaddr *)&ss, len);
	if (r < 0 && errno == EINPROGRESS) {
		for (;;) {
			int64_t left = deadline - mono_ms();
			if (left <= 0) {
				r = -ETIMEDOUT;
				break;
			}
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int k = poll(&p, 1, (int)left);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				r = -errno;
				break;
			}
			if (k == 0)
				continue;
			int e = 0;
			socklen_t el = sizeof(e);
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
				e = errno;
			r = -e;
			break;
		}
	} else if (r < 0) {
		r = -errno;
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int agent_port(struct agent_conn *c, const struct agent_req *req)
{
	uint16_t port = req->u.port.port;
	int64_t deadline = mono_ms() + req->u.port.timeout_ms;
	int fd = dial(AF_INET, port, deadline);
	/* A server on "localhost" may have bound ::1 alone. */
	if (fd == -ECONNREFUSED) {
		int fd6 = dial(AF_INET6, port, deadline);
		if (fd6 >= 0 || fd6 == -ETIMEDOUT)
			fd = fd6;
	}
	if (fd == -ECONNREFUSED)
		return agent_conn_fail(c, req->id, ECONNREFUSED,
		                       "nothing listens on port %u in the sandbox", port);
	if (fd == -ETIMEDOUT)
		return agent_conn_fail(c, req->id, ETIMEDOUT,
		                       "port %u in the sandbox did not accept within %u ms", port,
		                       req->u.port.timeout_ms);
	if (fd < 0)
		return agent_conn_fail(c, req->id, -fd, "cannot connect to port %u: %s", port,
		                       strerror(-fd));
	int r = agent_conn_ok(c, req->id, json_pack("{s:i}", "port", (int)port));
	if (r == 0) {
		struct bytepipe_opts o = { .idle_ms = 0, .stop_fd = -1 };
		/* The host's end of the connection ends the pipe: its idle
		 * limits are the host's (coved's, cove port's). */
		(void)!bytepipe_run(c->fd, fd, &o, NULL);
		r = -ECONNRESET;
	}
	close(fd);
	return r;
}
