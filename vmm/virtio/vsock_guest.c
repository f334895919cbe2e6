#include "virtio/vsock_guest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "virtio/iov.h"

#define HDR_LEN ((uint32_t)sizeof(struct virtio_vsock_hdr))

static bool queue_live(const struct vsock *v, unsigned int q)
{
	uint32_t st = __atomic_load_n(&v->t.st.status, __ATOMIC_SEQ_CST);
	const struct virtq *vq = &v->t.st.queues[q];
	return (st & VIRTIO_STATUS_DRIVER_OK) && !(st & VIRTIO_STATUS_DEVICE_NEEDS_RESET) &&
	       vq->ready && !vq->broken;
}

/* ---- connection lifecycle ------------------------------------------------ */

/* Takes c out of every structure; it is freed by vsock_reap(). */
static void conn_release(struct vsock *v, struct vsock_conn *c)
{
	if (c->dead)
		return;
	vsock_host_close(v, c);
	vsock_link_del(&c->rx_link);
	vsock_link_del(&c->timed_link);
	vsock_table_remove(&v->conns, c);
	c->dead = true;
	c->hnext = v->dead_conns;
	v->dead_conns = c;
}

/* Closes c's socket and queues an RST to the guest; c is freed once the
 * RST is out. */
static void vsock_conn_reset(struct vsock *v, struct vsock_conn *c)
{
	if (c->dead || c->state == VSOCK_CONN_CLOSING)
		return;
	if (c->state == VSOCK_CONN_HOST_CONNECTING && (c->pending & VSOCK_PEND_REQUEST)) {
		conn_release(v, c); /* the guest never heard of it */
		return;
	}
	vsock_host_close(v, c);
	vsock_link_del(&c->timed_link);
	vsock_ring_free(&c->out);
	c->state = VSOCK_CONN_CLOSING;
	c->pending = VSOCK_PEND_RST;
	c->data_ready = false;
	if (!vsock_link_linked(&c->rx_link))
		vsock_link_add_tail(&v->rx_work, &c->rx_link);
}

static bool conn_can_send_data(const struct vsock_conn *c)
{
	return c->state == VSOCK_CONN_ESTABLISHED && c->data_ready && !c->host_eof &&
	       !c->guest_no_rx && vsock_conn_peer_credit(c) > 0;
}

static uint32_t conn_mask(const struct vsock_conn *c)
{
	switch (c->state) {
	case VSOCK_CONN_GUEST_CONNECTING:
		return EPOLLOUT;
	case VSOCK_CONN_ESTABLISHED: {
		uint32_t m = c->out.len ? EPOLLOUT : 0;
		if (!c->data_ready && !c->host_eof && !c->guest_no_rx)
			m |= EPOLLIN;
		return m;
	}
	default:
		return 0; /* waiting on the guest, or no socket */
	}
}

/* Both directions are finished (or the guest asked for a full shutdown)
 * and every guest byte reached the socket: time for the closing RST. */
static bool conn_finished(const struct vsock_conn *c)
{
	if (c->state != VSOCK_CONN_ESTABLISHED || c->out.len)
		return false;
	if (c->guest_no_tx && c->guest_no_rx)
		return true;
	return c->guest_no_tx && c->host_eof && !(c->pending & VSOCK_PEND_SHUTDOWN);
}

/* Re-evaluates c after any change: finishes a connection both sides are
 * done with, updates its epoll interest and its place on the rx work list. */
static void vsock_conn_refresh(struct vsock *v, struct vsock_conn *c)
{
	if (c->dead)
		return;
	if (c->state == VSOCK_CONN_ESTABLISHED && c->guest_no_tx && !c->out.len &&
	    !c->host_wr_shut && c->fd >= 0) {
		/* The guest sends no more and all it sent is out: EOF. */
		(void)shutdown(c->fd, SHUT_WR);
		c->host_wr_shut = true;
	}
	if (conn_finished(c))
		vsock_conn_reset(v, c);
	if (c->fd >= 0 && vsock_host_set_mask(v, c, conn_mask(c)) < 0)
		vsock_conn_reset(v, c);
	bool wants = c->pending || conn_can_send_data(c);
	if (wants && !vsock_link_linked(&c->rx_link))
		vsock_link_add_tail(&v->rx_work, &c->rx_link);
	else if (!wants)
		vsock_link_del(&c->rx_link);
}

void vsock_drop_all_conns(struct vsock *v)
{
	for (unsigned int b = 0; b < VSOCK_TABLE_BUCKETS; b++)
		while (v->conns.buckets[b])
			conn_release(v, v->conns.buckets[b]);
	v->rst_len = v->rst_head = 0;
	v->tx_stalled = false;
}

/* Frees what was released during this callback. */
void vsock_reap(struct vsock *v)
{
	while (v->dead_conns) {
		struct vsock_conn *c = v->dead_conns;
		v->dead_conns = c->hnext;
		vsock_conn_free(c);
	}
	while (vsock_link_linked(&v->dead_clients)) {
		struct vsock_link *l = v->dead_clients.next;
		vsock_link_del(l);
		free(vsock_link_entry(l, struct vsock_client, link));
	}
}

/* ---- rx: packets to the guest ------------------------------------------- */

static void fill_hdr(const struct vsock *v, struct virtio_vsock_hdr *h, uint16_t op)
{
	memset(h, 0, sizeof(*h));
	h->src_cid = VSOCK_HOST_CID;
	h->dst_cid = v->config.guest_cid;
	h->type = VIRTIO_VSOCK_TYPE_STREAM;
	h->op = op;
}

static void queue_rst(struct vsock *v, const struct virtio_vsock_hdr *in)
{
	if (in->op == VIRTIO_VSOCK_OP_RST || v->rst_len == VSOCK_RST_RING)
		return; /* never answer an RST; process_tx keeps the ring from filling */
	struct vsock_rst *r = &v->rsts[(v->rst_head + v->rst_len) % VSOCK_RST_RING];
	r->src_cid = in->dst_cid;
	r->src_port = in->dst_port;
	r->dst_port = in->src_port;
	v->rst_len++;
}

/* The next packet c has for the guest, or OP_INVALID for none. */
static uint16_t conn_next_op(struct vsock *v, struct vsock_conn *c)
{
	if (c->pending & VSOCK_PEND_RST)
		return VIRTIO_VSOCK_OP_RST;
	if (c->pending & VSOCK_PEND_REQUEST)
		return VIRTIO_VSOCK_OP_REQUEST;
	if (c->pending & VSOCK_PEND_RESPONSE)
		return VIRTIO_VSOCK_OP_RESPONSE;
	if (conn_can_send_data(c)) {
		if (vsock_host_peek(v, c) > 0)
			return VIRTIO_VSOCK_OP_RW;
		if (c->pending & VSOCK_PEND_RST)
			return VIRTIO_VSOCK_OP_RST;
	}
	if (c->pending & VSOCK_PEND_SHUTDOWN)
		return VIRTIO_VSOCK_OP_SHUTDOWN;
	if (c->pending & VSOCK_PEND_CREDIT)
		return VIRTIO_VSOCK_OP_CREDIT_UPDATE;
	return VIRTIO_VSOCK_OP_INVALID;
}

/* Keeps the first `len` bytes of an iovec array; returns the new count. */
static uint32_t iov_trim(struct iovec *iov, uint32_t n, size_t len)
{
	for (uint32_t i = 0; i < n; i++) {
		if (iov[i].iov_len >= len) {
			iov[i].iov_len = len;
			return i + 1;
		}
		len -= iov[i].iov_len;
	}
	return n;
}

/* Reads stream data for c into the buffer after the header; returns the
 * bytes read (0 when nothing came after all). */
static uint32_t conn_read_data(struct vsock *v, struct vsock_conn *c, struct virtq_req *r)
{
	/* A copy: the header still goes to the front of r's segments. */
	struct iovec *in = v->iov;
	uint32_t n_in = r->n_in;
	memcpy(in, virtq_req_in(r), n_in * sizeof(*in));
	(void)iov_drop_front(&in, &n_in, HDR_LEN);
	uint64_t max = r->in_len - HDR_LEN;
	uint32_t credit = vsock_conn_peer_credit(c);
	if (max > credit)
		max = credit;
	if (max > VSOCK_MAX_PKT_PAYLOAD)
		max = VSOCK_MAX_PKT_PAYLOAD;
	n_in = iov_trim(in, n_in, (size_t)max);
	if (max == 0 || n_in == 0)
		return 0;
	ssize_t got = readv(c->fd, in, (int)n_in);
	if (got > 0)
		return (uint32_t)got;
	vsock_host_no_data(v, c, got);
	return 0;
}

/* Fills the rx buffer in r with c's next packet `op`; returns used bytes. */
static uint32_t conn_fill_rx(struct vsock *v, struct vsock_conn *c, uint16_t op,
                             struct virtq_req *r)
{
	struct virtio_vsock_hdr h;
	uint32_t payload = 0;
	fill_hdr(v, &h, op);
	h.src_port = c->local_port;
	h.dst_port = c->peer_port;
	switch (op) {
	case VIRTIO_VSOCK_OP_RST:
		c->pending = 0;
		break;
	case VIRTIO_VSOCK_OP_REQUEST:
		c->pending &= ~(uint32_t)VSOCK_PEND_REQUEST;
		break;
	case VIRTIO_VSOCK_OP_RESPONSE:
		c->pending &= ~(uint32_t)VSOCK_PEND_RESPONSE;
		break;
	case VIRTIO_VSOCK_OP_RW:
		payload = conn_read_data(v, c, r);
		/* Nothing read after all: say something harmless instead. */
		if (!payload)
			h.op = VIRTIO_VSOCK_OP_CREDIT_UPDATE;
		c->tx_cnt += payload;
		break;
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		c->pending &= ~(uint32_t)VSOCK_PEND_SHUTDOWN;
		h.flags = VIRTIO_VSOCK_SHUTDOWN_F_SEND;
		break;
	default:
		break;
	}
	h.len = payload;
	if (h.op != VIRTIO_VSOCK_OP_RST) {
		/* Every packet carries our credit. */
		h.buf_alloc = VSOCK_CONN_BUF_ALLOC;
		h.fwd_cnt = c->fwd_cnt;
		c->fwd_cnt_sent = c->fwd_cnt;
		c->pending &= ~(uint32_t)VSOCK_PEND_CREDIT;
	}
	(void)iov_from_buf(virtq_req_in(r), r->n_in, &h, sizeof(h));
	return HDR_LEN + payload;
}

static uint32_t rst_fill_rx(struct vsock *v, struct virtq_req *r)
{
	struct vsock_rst *rst = &v->rsts[v->rst_head];
	struct virtio_vsock_hdr h;
	fill_hdr(v, &h, VIRTIO_VSOCK_OP_RST);
	h.src_cid = rst->src_cid;
	h.src_port = rst->src_port;
	h.dst_port = rst->dst_port;
	v->rst_head = (v->rst_head + 1) % VSOCK_RST_RING;
	v->rst_len--;
	(void)iov_from_buf(virtq_req_in(r), r->n_in, &h, sizeof(h));
	return HDR_LEN;
}

static void process_rx(struct vsock *v)
{
	if (!queue_live(v, VSOCK_QUEUE_RX))
		return;
	struct virtq *q = &v->t.st.queues[VSOCK_QUEUE_RX];
	const struct guest_mem *mem = v->t.cfg.mem;
	struct virtq_req *r = &v->req;

	while (v->rst_len || vsock_link_linked(&v->rx_work)) {
		struct vsock_conn *c = NULL;
		uint16_t op = VIRTIO_VSOCK_OP_INVALID;
		if (!v->rst_len) {
			c = vsock_link_entry(v->rx_work.next, struct vsock_conn, rx_link);
			op = conn_next_op(v, c);
			if (op == VIRTIO_VSOCK_OP_INVALID) {
				vsock_link_del(&c->rx_link);
				vsock_conn_refresh(v, c);
				continue;
			}
		}
		int rc = virtq_pop(q, mem, r);
		if (rc == 0)
			break; /* no buffers: resume on the next rx notify */
		if (rc < 0 && !r->has_head) {
			virtio_mmio_needs_reset(&v->t);
			break;
		}
		uint32_t used = 0;
		/* A malformed or too small buffer is handed back unused. */
		if (rc > 0 && r->in_len >= HDR_LEN)
			used = c ? conn_fill_rx(v, c, op, r) : rst_fill_rx(v, r);
		if (virtq_push(q, mem, r->head, used) < 0) {
			virtio_mmio_needs_reset(&v->t);
			break;
		}
		if (!c || !used)
			continue;
		/* Round robin: c goes to the back if it has more. */
		vsock_link_del(&c->rx_link);
		if (op == VIRTIO_VSOCK_OP_RST)
			conn_release(v, c);
		else
			vsock_conn_refresh(v, c);
	}
	if (virtq_needs_interrupt(q, mem))
		virtio_mmio_signal_used(&v->t);
}

/* ---- tx: packets from the guest ----------------------------------------- */

static void handle_shutdown(struct vsock_conn *c, uint32_t flags)
{
	if (flags & VIRTIO_VSOCK_SHUTDOWN_F_RECEIVE)
		c->guest_no_rx = true;
	if (flags & VIRTIO_VSOCK_SHUTDOWN_F_SEND)
		c->guest_no_tx = true;
}

/* A well-formed packet for an existing connection. */
static void handle_conn_packet(struct vsock *v, struct vsock_conn *c,
                               const struct virtio_vsock_hdr *h, struct iovec *payload,
                               uint32_t n_payload)
{
	/* Every header carries the guest's current buffer space. */
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	if (c->state == VSOCK_CONN_CLOSING)
		return; /* our RST is on its way */
	bool established = c->state == VSOCK_CONN_ESTABLISHED;

	switch (h->op) {
	case VIRTIO_VSOCK_OP_RST:
		conn_release(v, c);
		return;
	case VIRTIO_VSOCK_OP_RESPONSE:
		if (c->state == VSOCK_CONN_HOST_CONNECTING && !(c->pending & VSOCK_PEND_REQUEST))
			vsock_host_connected(v, c);
		else
			vsock_conn_reset(v, c);
		break;
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		if (established)
			handle_shutdown(c, h->flags);
		else
			vsock_conn_reset(v, c);
		break;
	case VIRTIO_VSOCK_OP_RW:
		if (established && !c->guest_no_tx)
			vsock_host_send(v, c, payload, n_payload, h->len);
		else
			vsock_conn_reset(v, c);
		break;
	case VIRTIO_VSOCK_OP_CREDIT_UPDATE:
		break; /* the header already did it */
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		if (established)
			c->pending |= VSOCK_PEND_CREDIT;
		break;
	default: /* a second REQUEST, INVALID, unknown ops */
		vsock_conn_reset(v, c);
		break;
	}
	vsock_conn_refresh(v, c);
}

static void handle_tx(struct vsock *v, struct virtq_req *r)
{
	struct iovec *out = virtq_req_out(r);
	uint32_t n_out = r->n_out;
	struct virtio_vsock_hdr h;
	/* Copied once: the guest may rewrite its buffer under us. */
	if (iov_to_buf(out, n_out, 0, &h, sizeof(h)) != sizeof(h))
		return; /* no header, nobody to answer */
	if (h.src_cid != v->config.guest_cid)
		return; /* spoofed source: drop, like vhost does */
	struct vsock_conn *c = NULL;
	if (h.dst_cid == VSOCK_HOST_CID)
		c = vsock_table_find(&v->conns, h.dst_port, h.src_port);
	bool malformed = h.type != VIRTIO_VSOCK_TYPE_STREAM || h.len > r->out_len - HDR_LEN;
	if (h.dst_cid != VSOCK_HOST_CID || (malformed && !c)) {
		queue_rst(v, &h);
		return;
	}
	if (malformed) {
		if (h.op == VIRTIO_VSOCK_OP_RST)
			conn_release(v, c);
		else
			vsock_conn_reset(v, c);
		vsock_conn_refresh(v, c);
		return;
	}
	if (!c) {
		if (h.op != VIRTIO_VSOCK_OP_REQUEST || v->conns.count >= VSOCK_MAX_CONNS ||
		    vsock_host_guest_connect(v, &h) < 0)
			queue_rst(v, &h);
		return;
	}
	(void)iov_drop_front(&out, &n_out, HDR_LEN);
	n_out = iov_trim(out, n_out, h.len);
	handle_conn_packet(v, c, &h, out, h.len ? n_out : 0);
}

void vsock_process_tx(struct vsock *v)
{
	if (!queue_live(v, VSOCK_QUEUE_TX))
		return;
	struct virtq *q = &v->t.st.queues[VSOCK_QUEUE_TX];
	const struct guest_mem *mem = v->t.cfg.mem;
	v->tx_stalled = false;
	for (;;) {
		/* Each packet may owe the guest an RST; with no room for one,
		 * wait until rx buffers drain the ring. */
		if (v->rst_len == VSOCK_RST_RING) {
			v->tx_stalled = true;
			break;
		}
		int rc = virtq_pop(q, mem, &v->req);
		if (rc == 0)
			break;
		if (rc < 0 && !v->req.has_head) {
			virtio_mmio_needs_reset(&v->t);
			break;
		}
		if (rc > 0)
			handle_tx(v, &v->req);
		if (virtq_push(q, mem, v->req.head, 0) < 0) {
			virtio_mmio_needs_reset(&v->t);
			break;
		}
	}
	if (virtq_needs_interrupt(q, mem))
		virtio_mmio_signal_used(&v->t);
}

/* ---- event queue --------------------------------------------------------- */

static void post_event(struct vsock *v)
{
	if (!v->event_pending || !queue_live(v, VSOCK_QUEUE_EVENT))
		return;
	struct virtq *q = &v->t.st.queues[VSOCK_QUEUE_EVENT];
	const struct guest_mem *mem = v->t.cfg.mem;
	struct virtq_req *r = &v->req;
	while (v->event_pending) {
		int rc = virtq_pop(q, mem, r);
		if (rc == 0)
			break;
		if (rc < 0 && !r->has_head) {
			virtio_mmio_needs_reset(&v->t);
			break;
		}
		uint32_t used = 0;
		struct virtio_vsock_event ev = { .id = VIRTIO_VSOCK_EVENT_TRANSPORT_RESET };
		if (rc > 0 && r->in_len >= sizeof(ev)) {
			used = (uint32_t)iov_from_buf(virtq_req_in(r), r->n_in, &ev, sizeof(ev));
			v->event_pending = false;
			v->reset_unseen = true;
			virtq_want_notify(q, mem);
		}
		if (virtq_push(q, mem, r->head, used) < 0) {
			virtio_mmio_needs_reset(&v->t);
			break;
		}
	}
	if (virtq_needs_interrupt(q, mem))
		virtio_mmio_signal_used(&v->t);
}

/* Runs the queues: rx (packets for the guest), tx when it waited for rx,
 * the event queue, and interrupts. */
void vsock_run(struct vsock *v)
{
	process_rx(v);
	while (v->tx_stalled && v->rst_len < VSOCK_RST_RING && queue_live(v, VSOCK_QUEUE_TX)) {
		vsock_process_tx(v);
		process_rx(v);
	}
	post_event(v);
}

/* What the host side calls back (vsock_host.h). */
const struct vsock_proto vsock_guest_proto = {
	.refresh = vsock_conn_refresh,
	.reset = vsock_conn_reset,
	.run = vsock_run,
	.reap = vsock_reap,
};
