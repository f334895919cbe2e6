/* virtio-vsock's host side (vsock_host.c: Unix sockets, the nested epoll
 * set, timeouts) and the device state it shares with the guest side
 * (vsock.c: queues and the packet protocol), which sits above it and
 * hands it the protocol steps it needs (struct vsock_proto).  Everything
 * here runs with the transport lock held, on the I/O loop thread (or with
 * the loop stopped). */
#ifndef COVE_VIRTIO_VSOCK_HOST_H
#define COVE_VIRTIO_VSOCK_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/vsock_unix.h"
#include "virtio/mmio.h"
#include "virtio/vsock_conn.h"
#include "virtio/vsock_wire.h"

/* A host process connected to the listener that has not finished its
 * CONNECT line yet. */
struct vsock_client {
	struct vsock_watch w; /* first: epoll data points here */
	int fd;
	bool dead;
	struct vsock_unix_line line;
	uint64_t deadline_ms;
	uint32_t port; /* the port asked for, while held (reset_unseen) */
	bool held;
	struct vsock_link link; /* on v->clients, then v->dead_clients */
};

/* An RST owed to the guest for a packet that matched no connection. */
struct vsock_rst {
	uint64_t src_cid; /* the CID the offending packet was sent to */
	uint32_t src_port;
	uint32_t dst_port;
};

#define VSOCK_RST_RING 64 /* when full, tx processing waits for rx buffers */

struct vsock;

/* The guest side's protocol steps the host side calls (vsock.c). */
struct vsock_proto {
	/* Re-evaluates c after any change (vsock.c: vsock_conn_refresh). */
	void (*refresh)(struct vsock *v, struct vsock_conn *c);
	/* Closes c's socket and queues an RST to the guest. */
	void (*reset)(struct vsock *v, struct vsock_conn *c);
	/* Runs the queues, then frees what was released in this callback. */
	void (*run)(struct vsock *v);
	void (*reap)(struct vsock *v);
};

struct vsock {
	const struct vsock_proto *proto;
	struct virtio_mmio t;
	struct virtio_vsock_config config;
	char *uds_path;
	struct vsock_unix_id uds_id;
	struct evloop *loop;
	int epfd; /* nested epoll set of every socket, watched on loop */
	bool epfd_watched;
	int listen_fd;
	bool listen_paused; /* out of fds: accept resumes once some are freed */
	uint64_t fds_closed;
	uint64_t fds_closed_at_pause;
	int timer_fd;
	bool timer_armed;
	struct vsock_watch listen_w, timer_w;
	unsigned int line_timeout_ms, response_timeout_ms;

	struct vsock_table conns;
	struct vsock_link rx_work;    /* conns with something for the guest */
	struct vsock_link connecting; /* HOST_CONNECTING conns, oldest first */
	struct vsock_link clients;    /* pending clients, oldest first */
	unsigned int nclients;
	struct vsock_link dead_clients;
	struct vsock_conn *dead_conns; /* through hnext */

	struct vsock_rst rsts[VSOCK_RST_RING];
	unsigned int rst_head, rst_len;
	bool tx_stalled;    /* tx stopped because the RST ring was full */
	bool event_pending; /* TRANSPORT_RESET not yet delivered */
	/* Delivered, but the driver has not handed the event buffer back (it
	 * does once it has reset its connections): host clients wait while
	 * the reset is pending or unseen, else it could catch a connection
	 * made just after the restore; until reset_deadline_ms at most. */
	bool reset_unseen;
	uint64_t reset_deadline_ms;

	struct virtq_req req;             /* scratch for the chain in hand */
	struct iovec iov[VIRTQ_MAX_SIZE]; /* scratch: a payload view of req */
};

/* ---- host side (vsock_host.c) ---- */

/* Creates the epoll set with the listener and timer in it.  Needs
 * listen_fd and timer_fd open. */
int vsock_host_init(struct vsock *v) __attribute__((warn_unused_result));

/* The outer I/O loop callback for v->epfd. */
void vsock_host_ready(void *opaque, uint32_t events);

/* Registers `mask` for c's socket (0 removes it).  -errno on failure. */
int vsock_host_set_mask(struct vsock *v, struct vsock_conn *c, uint32_t mask)
    __attribute__((warn_unused_result));

/* Closes c's socket (if open) and leaves the epoll set. */
void vsock_host_close(struct vsock *v, struct vsock_conn *c);

/* A read or peek of the host socket returned n <= 0 (errno set when n < 0):
 * end of stream, nothing for now, or a failed connection (reset). */
void vsock_host_no_data(struct vsock *v, struct vsock_conn *c, ssize_t n);

/* Whether c's socket has data: 1 yes, 0 no (EOF or nothing: c updated),
 * and on a socket error c is reset. */
int vsock_host_peek(struct vsock *v, struct vsock_conn *c);

/* Forwards `len` guest bytes in iov to c's socket, buffering what it does
 * not take.  Resets c when the guest overran its credit. */
void vsock_host_send(struct vsock *v, struct vsock_conn *c, struct iovec *iov, uint32_t n,
                     uint32_t len);

/* Starts a guest-initiated connection to "<uds_path>_<dst_port>" for the
 * REQUEST h.  Returns 0, or -errno when the caller must answer RST. */
int vsock_host_guest_connect(struct vsock *v, const struct virtio_vsock_hdr *h)
    __attribute__((warn_unused_result));

/* The guest accepted a host-initiated connection: tell the client. */
void vsock_host_connected(struct vsock *v, struct vsock_conn *c);

/* Closes every pending client (destroy). */
void vsock_host_drop_clients(struct vsock *v);
/* Connects the clients held while the guest finished a transport reset. */
void vsock_host_release_clients(struct vsock *v);

#endif
