#include "backend/vsock_unix.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CONNECT_PREFIX     "CONNECT "
#define CONNECT_PREFIX_LEN (sizeof(CONNECT_PREFIX) - 1)

static int fill_addr(struct sockaddr_un *sa, const char *path)
{
	size_t len = strlen(path);
	if (len == 0)
		return -EINVAL;
	if (len + VSOCK_UNIX_SUFFIX_MAX >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, len);
	return 0;
}

static int new_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

/* Whether a listener answers at sa: 0 (none; the file is stale), -EADDRINUSE,
 * or -errno when we cannot tell (e.g. no permission). */
static int probe_live(const struct sockaddr_un *sa)
{
	int fd = new_socket();
	if (fd < 0)
		return fd;
	int rc = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	int err = rc == 0 ? 0 : errno;
	close(fd);
	/* A full backlog (EAGAIN) still means somebody is listening. */
	if (rc == 0 || err == EAGAIN || err == EINPROGRESS)
		return -EADDRINUSE;
	if (err == ECONNREFUSED)
		return 0;
	return -err;
}

/* Clears a stale socket at path; refuses anything else that lives there. */
static int clear_stale(const struct sockaddr_un *sa)
{
	struct stat st;
	if (lstat(sa->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	int err = probe_live(sa);
	if (err)
		return err;
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int vsock_unix_listen(const char *path, int *fd_out, struct vsock_unix_id *id)
{
	struct sockaddr_un sa;
	*fd_out = -1;
	id->valid = false;
	int err = fill_addr(&sa, path);
	if (err)
		return err;
	err = clear_stale(&sa);
	if (err)
		return err;
	int fd = new_socket();
	if (fd < 0)
		return fd;
	/* The file bind() creates takes the socket inode's mode less the
	 * umask: set it to 0600 on the fd first, so the file is never more
	 * open than that.  (umask() around bind would change it for every
	 * thread of the process at once, and chmod after bind leaves a
	 * window.) */
	if (fchmod(fd, 0600) < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		goto fail;
	}
	struct stat st;
	if (stat(path, &st) == 0) {
		id->dev = st.st_dev;
		id->ino = st.st_ino;
		id->valid = true;
	}
	if (listen(fd, SOMAXCONN) < 0) {
		err = -errno;
		vsock_unix_unlink(path, id);
		goto fail;
	}
	*fd_out = fd;
	return 0;
fail:
	close(fd);
	id->valid = false;
	return err;
}

void vsock_unix_unlink(const char *path, const struct vsock_unix_id *id)
{
	struct stat st;
	if (!path || !id->valid || lstat(path, &st) < 0)
		return;
	if (S_ISSOCK(st.st_mode) && st.st_dev == id->dev && st.st_ino == id->ino)
		(void)unlink(path);
}

int vsock_unix_connect_port(const char *path, uint32_t port, int *fd_out)
{
	struct sockaddr_un sa;
	*fd_out = -1;
	int err = fill_addr(&sa, path);
	if (err)
		return err;
	/* fill_addr() left room for the suffix. */
	size_t len = strlen(sa.sun_path);
	(void)snprintf(sa.sun_path + len, sizeof(sa.sun_path) - len, "_%u", port);
	int fd = new_socket();
	if (fd < 0)
		return fd;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		*fd_out = fd;
		return 0;
	}
	err = -errno;
	if (err == -EINPROGRESS) {
		*fd_out = fd;
		return err;
	}
	close(fd);
	return err;
}

int vsock_unix_connect_result(int fd)
{
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		return -errno;
	return -soerr;
}

int vsock_unix_parse_connect(const char *line, size_t len, uint32_t *port)
{
	if (len < CONNECT_PREFIX_LEN + 2 || len > VSOCK_UNIX_LINE_MAX || line[len - 1] != '\n')
		return -EPROTO;
	if (memcmp(line, CONNECT_PREFIX, CONNECT_PREFIX_LEN) != 0)
		return -EPROTO;
	size_t end = len - 1;
	if (line[end - 1] == '\r')
		end--;
	size_t i = CONNECT_PREFIX_LEN;
	if (i == end)
		return -EPROTO;
	uint64_t v = 0;
	for (; i < end; i++) {
		if (line[i] < '0' || line[i] > '9')
			return -EPROTO;
		v = v * 10 + (uint64_t)(line[i] - '0');
		if (v > UINT32_MAX)
			return -EPROTO;
	}
	*port = (uint32_t)v;
	return 0;
}

int vsock_unix_read_line(int fd, struct vsock_unix_line *l, uint32_t *port)
{
	size_t room = sizeof(l->buf) - l->len;
	if (room == 0)
		return -EPROTO;
	/* Peek first so nothing past the newline is consumed. */
	ssize_t n = recv(fd, l->buf + l->len, room, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -ECONNRESET;
	const char *nl = memchr(l->buf + l->len, '\n', (size_t)n);
	size_t take = nl ? (size_t)(nl - (l->buf + l->len)) + 1 : (size_t)n;
	ssize_t got = recv(fd, l->buf + l->len, take, MSG_DONTWAIT);
	if (got < 0)
		return -errno;
	if ((size_t)got != take)
		return -EIO; /* we are the only reader: cannot happen */
	l->len += take;
	if (!nl)
		return l->len == sizeof(l->buf) ? -EPROTO : 0;
	int err = vsock_unix_parse_connect(l->buf, l->len, port);
	return err ? err : 1;
}

int vsock_unix_ok_line(uint32_t port, char *buf, size_t len)
{
	int n = snprintf(buf, len, "OK %u\n", port);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	return n;
}
