/* virtio-vsock internals: one connection's state, the table that finds it
 * by (host port, guest port), its host-bound byte ring and the credit
 * arithmetic.  Private to virtio/vsock*.c; plain data structures with no
 * sockets or queues, so they are testable alone.
 *
 * Counters are the spec's free-running u32s (5.10.6.3): wraparound is
 * intended and every difference is taken modulo 2^32. */
#ifndef COVE_VIRTIO_VSOCK_CONN_H
#define COVE_VIRTIO_VSOCK_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* An intrusive circular doubly-linked list; a node points to itself while
 * it is on no list. */
struct vsock_link {
	struct vsock_link *prev, *next;
};

void vsock_link_init(struct vsock_link *l);
bool vsock_link_linked(const struct vsock_link *l);
void vsock_link_add_tail(struct vsock_link *head, struct vsock_link *l);
void vsock_link_del(struct vsock_link *l); /* no-op when unlinked */

#define vsock_link_entry(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* What an epoll event's data.ptr points at: the first member of each
 * watched object. */
enum vsock_watch_kind {
	VSOCK_WATCH_LISTENER,
	VSOCK_WATCH_TIMER,
	VSOCK_WATCH_CLIENT,
	VSOCK_WATCH_CONN,
};

struct vsock_watch {
	enum vsock_watch_kind kind;
};

/* Bytes from the guest the Unix peer has not taken yet.  Allocated on
 * first use, `cap` bytes, never more: the guest's credit bounds it. */
struct vsock_ring {
	uint8_t *buf;
	uint32_t cap;
	uint32_t head; /* first byte */
	uint32_t len;  /* bytes held */
};

/* Appends `len` bytes gathered from iov.  -ENOBUFS (nothing appended) when
 * they do not fit, -ENOMEM when the buffer cannot be allocated. */
int vsock_ring_put(struct vsock_ring *r, const struct iovec *iov, uint32_t n, size_t len)
    __attribute__((warn_unused_result));
/* Describes the held bytes as at most two iovecs; returns how many. */
int vsock_ring_peek(const struct vsock_ring *r, struct iovec iov[2]);
/* Drops `len` bytes (<= r->len) from the front. */
void vsock_ring_consume(struct vsock_ring *r, uint32_t len);
void vsock_ring_free(struct vsock_ring *r);

enum vsock_conn_state {
	VSOCK_CONN_HOST_CONNECTING,  /* REQUEST to the guest sent or queued */
	VSOCK_CONN_GUEST_CONNECTING, /* Unix connect in progress */
	VSOCK_CONN_ESTABLISHED,
	VSOCK_CONN_CLOSING, /* socket gone; an RST to the guest is queued */
};

/* Control packets waiting for an rx buffer (one of each at most). */
#define VSOCK_PEND_REQUEST  0x01
#define VSOCK_PEND_RESPONSE 0x02
#define VSOCK_PEND_SHUTDOWN 0x04
#define VSOCK_PEND_CREDIT   0x08
#define VSOCK_PEND_RST      0x10

struct vsock_conn {
	struct vsock_watch w; /* first: epoll data points here */
	uint32_t local_port;  /* host side (CID 2) */
	uint32_t peer_port;   /* guest side */
	int fd;               /* the Unix socket, -1 once closed */
	enum vsock_conn_state state;
	uint32_t pending;  /* VSOCK_PEND_* */
	uint32_t ev_mask;  /* events registered in the device's epoll set */
	bool data_ready;   /* the socket was readable and has not been drained */
	bool host_eof;     /* the Unix peer sent EOF */
	bool guest_no_tx;  /* the guest sent SHUTDOWN_F_SEND */
	bool guest_no_rx;  /* the guest sent SHUTDOWN_F_RECEIVE */
	bool host_wr_shut; /* shutdown(SHUT_WR) done on the socket */
	bool dead;         /* freed at the end of the current callback */
	/* Guest-bound direction: the guest's buffer and what we sent. */
	uint32_t peer_buf_alloc;
	uint32_t peer_fwd_cnt;
	uint32_t tx_cnt;
	/* Host-bound direction: what the guest sent and what reached the
	 * Unix socket (our fwd_cnt), and the fwd_cnt the guest last saw. */
	uint32_t rx_cnt;
	uint32_t fwd_cnt;
	uint32_t fwd_cnt_sent;
	struct vsock_ring out;
	uint64_t deadline_ms; /* HOST_CONNECTING: give up on the guest then */
	struct vsock_conn *hnext;
	struct vsock_link rx_link;    /* on the device's rx work list */
	struct vsock_link timed_link; /* on the device's response-timeout list */
};

/* Bytes the guest can still take: peer_buf_alloc - (tx_cnt - peer_fwd_cnt),
 * 0 when a bogus fwd_cnt claims more in flight than its buffer holds. */
uint32_t vsock_conn_peer_credit(const struct vsock_conn *c);

/* Whether the guest, as far as it knows, has little room left with us and
 * we have consumed something since we last told it: time for a credit
 * update. */
bool vsock_conn_credit_low(const struct vsock_conn *c, uint32_t buf_alloc);

#define VSOCK_TABLE_BUCKETS 1024 /* power of two */

/* Connections keyed by (local_port, peer_port). */
struct vsock_table {
	struct vsock_conn *buckets[VSOCK_TABLE_BUCKETS];
	unsigned int count;
	uint32_t next_port; /* next ephemeral host port to try */
};

void vsock_table_init(struct vsock_table *t);
struct vsock_conn *vsock_table_find(const struct vsock_table *t, uint32_t local_port,
                                    uint32_t peer_port);
/* -EEXIST when the key is taken. */
int vsock_table_insert(struct vsock_table *t, struct vsock_conn *c)
    __attribute__((warn_unused_result));
void vsock_table_remove(struct vsock_table *t, struct vsock_conn *c);
/* A host port >= min that no live connection uses as its local port, or
 * -EADDRNOTAVAIL. */
int vsock_table_alloc_port(struct vsock_table *t, uint32_t min, uint32_t *port)
    __attribute__((warn_unused_result));

/* A fresh connection (fd -1, all lists unlinked), or NULL. */
struct vsock_conn *vsock_conn_new(uint32_t local_port, uint32_t peer_port, uint32_t buf_alloc);
/* Frees the ring and the struct; the caller has closed fd and unlinked it. */
void vsock_conn_free(struct vsock_conn *c);

#endif
