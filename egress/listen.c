/* A socket on the gateway's address (egress/listen.h). */
#include "listen.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int egress_listen_gw(struct egress *e, int type, uint16_t port, struct ev *ev,
                     void (*fn)(struct ev *, uint32_t))
{
	int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	memcpy(&sa.sin_addr, e->cfg.gateway.a, 4);
	int r = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (type == SOCK_STREAM && listen(fd, 128)))
		r = -errno;
	ev->fd = fd;
	ev->fn = fn;
	if (!r)
		r = loop_add(&e->loop, ev, EPOLLIN);
	if (r) {
		close(fd);
		ev->fd = -1;
	}
	return r;
}
