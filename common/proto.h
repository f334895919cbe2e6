/* The host <-> guest-agent wire protocol (docs/protocol.md), shared by
 * cove-agent and libcove.  Frames over a vsock stream:
 *
 *   u32 len | u16 type | u16 flags | u32 id | payload[len]   (little endian)
 *
 * Control payloads are JSON objects; data payloads (STDIN, STDOUT, STDERR,
 * DATA) are raw bytes.  A frame's payload is at most PROTO_MAX_PAYLOAD
 * bytes; a malformed frame (unknown type, oversize, bad JSON where JSON is
 * expected) closes that connection with an ERROR frame. */
#ifndef COVE_PROTO_H
#define COVE_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROTO_VERSION     1
#define PROTO_AGENT_PORT  1024 /* the agent listens here (guest vsock port) */
#define PROTO_READY_PORT  1025 /* the agent connects to the host here when up */
#define PROTO_HDR_SIZE    12
#define PROTO_MAX_PAYLOAD (1u << 20)

enum proto_type {
	PROTO_HELLO = 1,     /* agent -> host: {"version", "agent", "uptime_ms"} */
	PROTO_PING = 2,      /* host -> agent: {} */
	PROTO_PONG = 3,      /* agent -> host: {"version"} */
	PROTO_EXEC = 10,     /* host -> agent: see docs/protocol.md */
	PROTO_STARTED = 11,  /* agent -> host: {"pid"} */
	PROTO_STDIN = 12,    /* host -> agent: raw bytes; empty = end of input */
	PROTO_STDOUT = 13,   /* agent -> host: raw bytes (PTY output too) */
	PROTO_STDERR = 14,   /* agent -> host: raw bytes */
	PROTO_EXIT = 15,     /* agent -> host: {"code"} or {"signal"}, "timed_out" */
	PROTO_SIGNAL = 16,   /* host -> agent: {"signal"} to the running process */
	PROTO_RESIZE = 17,   /* host -> agent: {"rows", "cols"} (PTY mode) */
	PROTO_FILE_PUT = 20, /* host -> agent: {"path", "mode", "uid", "gid"}, then DATA */
	PROTO_FILE_GET = 21, /* host -> agent: {"path"}; OK {stat}, then DATA */
	PROTO_DATA = 22,     /* raw file bytes; an empty DATA frame ends the file */
	PROTO_STAT = 23,     /* {"path"} -> OK {"type","size","mode","uid","gid","mtime"} */
	PROTO_LIST = 24,     /* {"path"} -> OK {"entries": [{"name","type","size","mode"}]} */
	PROTO_MKDIR = 25,    /* {"path", "mode", "parents", "uid", "gid"} -> OK {} */
	PROTO_REMOVE = 26,   /* {"path", "recursive"} -> OK {} */
	PROTO_SYNC = 27,     /* {} -> OK {} */
	PROTO_SHUTDOWN = 28, /* {} -> OK {}, then the guest syncs and ends its VM */
	PROTO_RESTORED = 29, /* {"time_ns","hostname","sandbox_id","seed"} -> OK {"reseeded",
	                        "hwrng_bytes"}: the VM was restored from a snapshot */
	PROTO_OK = 30,       /* agent -> host: success, JSON result */
	PROTO_ERROR = 31,    /* either way: {"errno", "message"} */
	/* Detached processes (docs/protocol.md "Detached processes"): owned by
	 * the agent, they outlive the connection that started them. */
	PROTO_PROC_START = 40,       /* EXEC's members + "tag" -> OK {"pid"} */
	PROTO_PROC_ATTACH = 41,      /* {"pid", "offset"} -> OK, STDOUT/STDERR..., EXIT */
	PROTO_PROC_INPUT = 42,       /* raw: u32 pid (LE), then stdin bytes -> OK {} */
	PROTO_PROC_CLOSE_STDIN = 43, /* {"pid"} -> OK {} */
	PROTO_PROC_SIGNAL = 44,      /* {"pid", "signal"} -> OK {} (to its process group) */
	PROTO_PROC_LIST = 45,        /* {} -> OK {"procs": [...]} */
	PROTO_PROC_RESIZE = 46,      /* {"pid", "rows", "cols"} -> OK {} */
	PROTO_MOVE = 47,             /* {"from", "to"} -> OK {} (rename) */
	PROTO_SYMLINK = 48,          /* {"path", "target", "uid", "gid", "user"} -> OK {} */
	/* 50-59: credential injection (issue 15) */
	PROTO_CA = 50, /* {"ca": PEM, "env": {"NAME": "value"}} -> OK {"bundle": B}: trust the
	                  sandbox CA (replacing an older one), export it and env to new execs */
	/* 60-69: templates (issue 29) */
	PROTO_DEFAULTS = 60, /* {"env": {"K": "V"}, "cwd", "user"} -> OK {}: the defaults of
	                        every later EXEC and PROC_START (replacing older ones) */
	PROTO_USER = 61,     /* {"user"} -> OK {"uid", "gid", "groups", "home"}: a user spec
	                        resolved in the guest, as EXEC would */
	/* 70-71: directory watches (issue 30) */
	PROTO_WATCH = 70,       /* {"path", "recursive"} -> OK {"id"}, then WATCH_EVENT frames
	                           until the host closes the connection (or an ERROR ends it) */
	PROTO_WATCH_EVENT = 71, /* agent -> host: {"id", "name", "type"}: name relative to the
	                           watched folder; type create|write|remove|rename|chmod */
	/* 72-73: a consistent point for the filesystem diff (issue 30) */
	PROTO_FREEZE = 72, /* {"timeout_ms"} -> OK {}: sync, then FIFREEZE on /; the agent
	                      thaws it itself after timeout_ms (1-60000, default 10000) */
	PROTO_THAW = 73,   /* {} -> OK {"was_frozen"}: FITHAW on / */
	/* 80: ports (issue 32) */
	PROTO_PORT = 80, /* {"port", "timeout_ms"} -> OK {"port"}: the agent connected to
	                    that TCP port on the guest's loopback; from then on the
	                    connection carries raw bytes both ways (no frames) */
};

struct proto_hdr {
	uint32_t len;
	uint16_t type;
	uint16_t flags;
	uint32_t id;
};

/* True for a type this version knows. */
bool proto_type_known(uint16_t type);
/* True for types whose payload is JSON (the rest are raw bytes). */
bool proto_type_is_json(uint16_t type);

void proto_hdr_encode(uint8_t out[PROTO_HDR_SIZE], const struct proto_hdr *h);
/* Decodes and validates a header: -EPROTO for an unknown type, -EMSGSIZE
 * for a payload over PROTO_MAX_PAYLOAD. */
int proto_hdr_decode(const uint8_t in[PROTO_HDR_SIZE], struct proto_hdr *h)
    __attribute__((warn_unused_result));

/* Blocking helpers over a stream fd (EINTR and short I/O handled). */
int proto_send(int fd, uint16_t type, uint32_t id, const void *payload, uint32_t len)
    __attribute__((warn_unused_result));
/* Receives one frame; *payload is malloc'ed (NUL-terminated for
 * convenience, len bytes plus one) or NULL when len is 0.  Returns 0,
 * -ECONNRESET at a clean end of stream before a header, -EPROTO or
 * -EMSGSIZE for a malformed header (*h then holds the decoded header, so the
 * caller can answer with its id), -ECONNABORTED for a stream that ends inside
 * a frame, or another -errno.  A non-blocking fd is waited on with poll(). */
int proto_recv(int fd, struct proto_hdr *h, uint8_t **payload) __attribute__((warn_unused_result));

/* Deadline-bound variants, for the host, which must never wait forever on
 * a guest: deadline is a CLOCK_MONOTONIC time in milliseconds (mono_ms()),
 * or PROTO_NO_DEADLINE.  -ETIMEDOUT once it has passed with the frame not
 * wholly sent or received (a partial frame is lost: close the fd). */
#define PROTO_NO_DEADLINE INT64_MIN
int proto_send_until(int fd, uint16_t type, uint32_t id, const void *payload, uint32_t len,
                     int64_t deadline) __attribute__((warn_unused_result));
int proto_recv_until(int fd, struct proto_hdr *h, uint8_t **payload, int64_t deadline)
    __attribute__((warn_unused_result));

/* ---- additions (cove-agent) ----------------------------------------------
 * proto_send and proto_recv also work on non-blocking fds (they poll), and
 * proto_send uses MSG_NOSIGNAL on sockets: a vanished peer is -EPIPE, never
 * SIGPIPE. */

struct iovec;
/* Sends iovcnt (1..4) buffers that together form whole frames, handling short
 * writes, EINTR and EAGAIN (poll).  Returns 0 or -errno. */
int proto_sendv(int fd, const struct iovec *iov, int iovcnt) __attribute__((warn_unused_result));
/* proto_sendv with a deadline, as proto_send_until. */
int proto_sendv_until(int fd, const struct iovec *iov, int iovcnt, int64_t deadline)
    __attribute__((warn_unused_result));

/* An incremental frame reader: the state of one frame being received, so a
 * non-blocking event loop can take frames as bytes arrive.  Payloads are read
 * straight into their malloc'ed buffer (no copy on the fd path). */
struct proto_reader {
	uint8_t hdr[PROTO_HDR_SIZE];
	struct proto_hdr hdr_dec; /* valid once hdr_done (and after -EPROTO/-EMSGSIZE) */
	uint32_t have;            /* bytes of the current frame received */
	bool hdr_done;
	bool ready;       /* a whole frame waits for proto_reader_take() */
	uint8_t *payload; /* len + 1 bytes, NUL-terminated; NULL when len is 0 */
};

void proto_reader_init(struct proto_reader *r);
/* Frees a partial frame and starts over; required after an error. */
void proto_reader_reset(struct proto_reader *r);
/* True between frames (no byte of a next frame received yet). */
bool proto_reader_idle(const struct proto_reader *r);
/* Reads from fd until a frame is complete (1), the fd has nothing more now
 * (-EAGAIN), or the end of stream: -ECONNRESET between frames, -ECONNABORTED
 * inside one.  -EPROTO/-EMSGSIZE for a malformed header, -ENOMEM, -errno. */
int proto_reader_read(struct proto_reader *r, int fd) __attribute__((warn_unused_result));
/* Consumes bytes from buf: returns 1 when a frame is complete (*used bytes
 * taken, the rest belongs to later frames), 0 when all len bytes were taken
 * and more are needed, or -EPROTO/-EMSGSIZE/-ENOMEM. */
int proto_reader_feed(struct proto_reader *r, const uint8_t *buf, size_t len, size_t *used)
    __attribute__((warn_unused_result));
/* After 1 from read/feed: hands over the frame (*payload now the caller's,
 * as proto_recv) and readies the reader for the next one. */
void proto_reader_take(struct proto_reader *r, struct proto_hdr *h, uint8_t **payload);

#endif
