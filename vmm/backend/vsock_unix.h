/* The host end of virtio-vsock: Unix sockets in Firecracker's "hybrid
 * vsock" convention.
 *
 *  - Host-initiated: the VMM listens on PATH.  A host process connects and
 *    writes "CONNECT <port>\n"; once the guest accepts, it reads
 *    "OK <hostport>\n" and the socket is a byte stream to the guest.
 *  - Guest-initiated: a guest connection to the host (CID 2) on port P is
 *    forwarded to the Unix socket "<PATH>_<P>".
 *
 * These helpers only do socket plumbing and parsing; the device
 * (virtio/vsock.c) owns the connections.  Every fd they create is
 * non-blocking and close-on-exec. */
#ifndef COVE_VSOCK_UNIX_H
#define COVE_VSOCK_UNIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Longest CONNECT line accepted, newline included. */
#define VSOCK_UNIX_LINE_MAX 32

/* Room PATH must leave in sun_path for "_<port>" (a u32 is 10 digits). */
#define VSOCK_UNIX_SUFFIX_MAX 11

/* Identifies the socket file we bound, so teardown never unlinks a file
 * somebody else put at PATH since. */
struct vsock_unix_id {
	dev_t dev;
	ino_t ino;
	bool valid;
};

/* Binds and listens on `path`.  A stale socket file left by a dead VMM
 * (connecting to it is refused) is unlinked first.  Returns 0 and *fd_out,
 * or -EADDRINUSE (a live listener owns path), -EEXIST (path exists and is
 * not a socket), -ENAMETOOLONG (no room for "_<port>" in sun_path), -EINVAL
 * (empty path) or another -errno. */
int vsock_unix_listen(const char *path, int *fd_out, struct vsock_unix_id *id)
    __attribute__((warn_unused_result));

/* Unlinks `path` if it is still the socket file vsock_unix_listen() made. */
void vsock_unix_unlink(const char *path, const struct vsock_unix_id *id);

/* Starts a non-blocking connect to "<path>_<port>".  Returns 0 (connected),
 * -EINPROGRESS (wait for EPOLLOUT, then vsock_unix_connect_result()), or
 * -errno (-ENOENT, -ECONNREFUSED, -EAGAIN when the listener's backlog is
 * full, ...), in which case no fd is left open.  *fd_out is set for 0 and
 * -EINPROGRESS only. */
int vsock_unix_connect_port(const char *path, uint32_t port, int *fd_out)
    __attribute__((warn_unused_result));

/* The outcome of a connect that returned -EINPROGRESS: 0 or -errno. */
int vsock_unix_connect_result(int fd) __attribute__((warn_unused_result));

/* Parses one CONNECT line, newline included: "CONNECT <decimal u32>\n"
 * (a "\r" before the newline is tolerated).  Pure.  Returns 0 and *port, or
 * -EPROTO. */
int vsock_unix_parse_connect(const char *line, size_t len, uint32_t *port)
    __attribute__((warn_unused_result));

/* A CONNECT line being received.  Zero it before the first read. */
struct vsock_unix_line {
	char buf[VSOCK_UNIX_LINE_MAX];
	size_t len;
};

/* Reads what `fd` has of the CONNECT line without consuming a byte past
 * the newline (a client may send stream data right behind it).  Returns 1
 * and *port once a whole valid line is in, 0 when more is needed (EAGAIN),
 * -EPROTO for a malformed or overlong line, -ECONNRESET at EOF, or another
 * -errno. */
int vsock_unix_read_line(int fd, struct vsock_unix_line *l, uint32_t *port)
    __attribute__((warn_unused_result));

/* Formats the "OK <port>\n" reply into buf; returns its length or -ENOSPC. */
int vsock_unix_ok_line(uint32_t port, char *buf, size_t len) __attribute__((warn_unused_result));

#endif
