#include "virtio/net_io.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "virtio/iov.h"

#define NUM_BUFFERS_OFF 10 /* offsetof(struct virtio_net_hdr_v1, num_buffers) */

/* Frames above this size make the next one try the direct path: taking a
 * whole VNET_FRAME_MAX of mergeable buffers off the ring (and giving most
 * back) only pays for large frames; small ones (ACKs) are copied from the
 * host buffer into just the chains they need. */
#define VNET_RX_BIG 4096

static void count(uint64_t *c, uint64_t v)
{
	__atomic_add_fetch(c, v, __ATOMIC_RELAXED);
}

uint64_t vnet_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * RL_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Lock held.  Whether the driver runs the device (queues may be used). */
bool vnet_live(const struct vnet *n, uint16_t queue)
{
	uint32_t st = __atomic_load_n(&n->t.st.status, __ATOMIC_SEQ_CST);
	return (st & VIRTIO_STATUS_DRIVER_OK) && !(st & VIRTIO_STATUS_DEVICE_NEEDS_RESET) &&
	       n->t.st.queues[queue].ready;
}

static bool has(const struct vnet *n, unsigned int bit)
{
	return virtio_mmio_has_feature(&n->t, bit);
}

/* Arms a limiter's timer for `wait` ns.  #syscalls: timerfd_settime (I/O thread) */
static int arm_timer(int fd, uint64_t wait)
{
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(wait / RL_NS_PER_S),
		              .tv_nsec = (long)(wait % RL_NS_PER_S) },
	};
	return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

/* Starts or stops polling the TAP.  Any thread (epoll_ctl), lock held. */
void vnet_set_rx_poll(struct vnet *n, bool on)
{
	if (n->tap_dead)
		on = false;
	if (n->rx_poll == on)
		return;
	if (n->tap_watched && evloop_mod(n->loop, n->tap.fd, on ? EPOLLIN : 0) < 0)
		return; /* keep what the loop really does */
	n->rx_poll = on;
}

/* Tells the TAP which offloads the guest negotiated: frames it hands us
 * then keep partial checksums and GSO sizes, which the header carries. */
void vnet_apply_offload(struct vnet *n)
{
	if (!n->offload_pending)
		return;
	n->offload_pending = false;
	unsigned int f = 0;
	if (has(n, VIRTIO_NET_F_GUEST_CSUM)) {
		f |= TAP_OFFLOAD_CSUM;
		if (has(n, VIRTIO_NET_F_GUEST_TSO4))
			f |= TAP_OFFLOAD_TSO4;
		if (has(n, VIRTIO_NET_F_GUEST_TSO6))
			f |= TAP_OFFLOAD_TSO6;
		if (has(n, VIRTIO_NET_F_GUEST_ECN))
			f |= TAP_OFFLOAD_TSO_ECN;
	}
	int r = tap_set_offload(&n->tap, f);
	if (r < 0 && !n->offload_warned) {
		n->offload_warned = true;
		fprintf(stderr, "cove-vmm: virtio-net: TUNSETOFFLOAD 0x%x on %s: %s\n", f,
		        n->tap.name, strerror(-r));
	}
}

/* ---- receive ------------------------------------------------------------ */

void vnet_rx_reset_fifo(struct vnet *n)
{
	n->chain0 = n->nchains = n->niov = 0;
	n->good_cap = 0;
}

/* Gives every taken, unused chain back to the ring. */
static void rx_unpop(struct vnet *n)
{
	n->t.st.queues[VNET_RXQ].last_avail_idx -= (uint16_t)(n->nchains - n->chain0);
	vnet_rx_reset_fifo(n);
}

/* Moves the unused chains and their segments to the front. */
static void rx_compact(struct vnet *n)
{
	if (n->chain0 == 0)
		return;
	uint32_t base = n->chain0 < n->nchains ? n->chains[n->chain0].iov_off : n->niov;
	memmove(n->rx_iov, n->rx_iov + base, (n->niov - base) * sizeof(n->rx_iov[0]));
	n->niov -= base;
	uint32_t left = n->nchains - n->chain0;
	memmove(n->chains, n->chains + n->chain0, left * sizeof(n->chains[0]));
	for (uint32_t i = 0; i < left; i++)
		n->chains[i].iov_off -= base;
	n->chain0 = 0;
	n->nchains = left;
}

/* The first good unused chain, or NULL. */
static struct rx_chain *rx_first_good(struct vnet *n)
{
	for (uint32_t i = n->chain0; i < n->nchains; i++)
		if (!n->chains[i].bad)
			return &n->chains[i];
	return NULL;
}

/**
 * rx_gather() - take receive chains until a frame of @want bytes has room
 * @n:		the device, lock held
 * @want:	bytes (header included)
 * @mrg:	mergeable buffers: the good chains together must hold @want;
 *		else one good chain is enough (whether it holds @want is
 *		the caller's question)
 *
 * Stops early when the ring is empty or there is no room left to hold
 * chains (n->rx_full).  Each chain's descriptors were copied once by
 * virtq_pop(); only those copies are used.
 * Return: 0, or -EPROTO when the ring itself is broken.
 */
static int rx_gather(struct vnet *n, uint64_t want, bool mrg)
{
	struct virtq *q = &n->t.st.queues[VNET_RXQ];
	struct virtq_req *r = &n->req;
	n->rx_full = false;
	while (mrg ? n->good_cap < want : !rx_first_good(n)) {
		if (n->nchains == VIRTQ_MAX_SIZE || n->niov + VIRTQ_MAX_SIZE > VNET_RX_IOV_MAX)
			rx_compact(n);
		if (n->nchains == VIRTQ_MAX_SIZE || n->niov + VIRTQ_MAX_SIZE > VNET_RX_IOV_MAX ||
		    n->nchains - n->chain0 >= q->size) {
			n->rx_full = true;
			return 0;
		}
		int rc = virtq_pop(q, n->t.cfg.mem, r);
		if (rc == 0)
			return 0;
		if (rc < 0 && !r->has_head)
			return -EPROTO;
		struct rx_chain *c = &n->chains[n->nchains++];
		*c = (struct rx_chain){ .head = r->head, .iov_off = n->niov };
		/* Receive buffers are all device-writable and hold a header. */
		c->bad = rc < 0 || r->n_out || r->in_len < VNET_HDR_LEN;
		if (c->bad)
			continue;
		memcpy(n->rx_iov + n->niov, virtq_req_in(r), r->n_in * sizeof(struct iovec));
		n->niov += r->n_in;
		c->n_iov = r->n_in;
		c->cap = r->in_len > UINT32_MAX ? UINT32_MAX : (uint32_t)r->in_len;
		n->good_cap += c->cap;
	}
	return 0;
}

/* Whether a frame of len bytes has room in the unused chains now. */
static bool rx_fits(struct vnet *n, uint32_t len, bool mrg)
{
	if (mrg)
		return n->good_cap >= len;
	const struct rx_chain *c = rx_first_good(n);
	return c && c->cap >= len;
}

/* Writes 2 bytes at byte offset off of an iovec array. */
static void iov_put16(const struct iovec *iov, uint32_t cnt, uint64_t off, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)v, (uint8_t)(v >> 8) };
	unsigned int k = 0;
	for (uint32_t i = 0; i < cnt && k < 2; i++) {
		uint64_t len = iov[i].iov_len;
		while (k < 2 && off < len)
			((uint8_t *)iov[i].iov_base)[off++] = b[k++];
		off = off >= len ? off - len : 0;
	}
}

/**
 * rx_commit() - hand a frame to the guest in the unused chains
 * @n:		the device, lock held; rx_fits(len) holds
 * @len:	the frame's bytes, header first
 * @src:	where the frame is, or NULL when readv put it in place already
 * @mrg:	mergeable buffers negotiated
 *
 * The frame fills chains in ring order; num_buffers says how many.  The
 * used entries of one frame are consecutive, as the driver reads them;
 * bad chains the frame passed are handed back empty after it.
 * Return: 0, or -EFAULT when the used ring cannot be written.
 */
static int rx_commit(struct vnet *n, uint32_t len, const uint8_t *src, bool mrg)
{
	struct virtq *q = &n->t.st.queues[VNET_RXQ];
	const struct guest_mem *mem = n->t.cfg.mem;
	struct rx_chain *c0 = rx_first_good(n);
	uint32_t first = (uint32_t)(c0 - n->chains);
	struct iovec *iov = n->rx_iov + c0->iov_off;
	if (src)
		(void)iov_from_buf(iov, mrg ? n->niov - c0->iov_off : c0->n_iov, src, len);

	uint32_t end = first, left = len;
	uint16_t nbuf = 0;
	for (uint32_t i = first; i < n->nchains && left; i++) {
		if (n->chains[i].bad)
			continue;
		left -= n->chains[i].cap < left ? n->chains[i].cap : left;
		nbuf++;
		end = i + 1;
		if (!mrg)
			break;
	}
	/* The header is in the first chain (it holds at least 12 bytes). */
	iov_put16(iov, c0->n_iov, NUM_BUFFERS_OFF, nbuf);

	int err = 0;
	left = len;
	for (uint32_t i = first; i < end; i++) {
		struct rx_chain *c = &n->chains[i];
		if (c->bad)
			continue;
		uint32_t take = c->cap < left ? c->cap : left;
		left -= take;
		n->good_cap -= c->cap;
		if (virtq_push(q, mem, c->head, take) < 0)
			err = -EFAULT;
	}
	for (uint32_t i = n->chain0; i < end; i++) {
		if (!n->chains[i].bad)
			continue;
		count(&n->stats.rx_bad_chains, 1);
		if (virtq_push(q, mem, n->chains[i].head, 0) < 0)
			err = -EFAULT;
	}
	n->chain0 = end;
	n->rx_big = len > VNET_RX_BIG;
	count(&n->stats.rx_packets, 1);
	count(&n->stats.rx_bytes, len - VNET_HDR_LEN);
	return err;
}

/* Room for the largest frame: read straight into the guest's buffers. */
static bool rx_direct_room(struct vnet *n, bool mrg)
{
	if (mrg)
		return n->good_cap >= VNET_FRAME_MAX;
	const struct rx_chain *c = rx_first_good(n);
	return c && c->cap >= VNET_FRAME_MAX;
}

/* A read from the TAP failed: 1 to end the pass and poll again later
 * (nothing there), -1 to stop polling for good. */
static int rx_read_failed(struct vnet *n)
{
	if (errno == EAGAIN || errno == EINTR)
		return 1;
	fprintf(stderr, "cove-vmm: virtio-net: reading %s: %s; receive stops\n", n->tap.name,
	        strerror(errno));
	n->tap_dead = true;
	return -1;
}

/* One frame straight from the TAP into the chains.  1: a frame was
 * handled, 0: nothing to read, -1: the TAP failed, -2: the ring broke. */
static int rx_direct(struct vnet *n, bool mrg)
{
	struct rx_chain *c0 = rx_first_good(n);
	uint32_t cnt = mrg ? n->niov - c0->iov_off : c0->n_iov;
	/* #syscalls: readv (I/O thread) */
	ssize_t r = readv(n->tap.fd, n->rx_iov + c0->iov_off, (int)cnt);
	if (r < 0)
		return rx_read_failed(n) > 0 ? 0 : -1;
	if ((size_t)r < VNET_HDR_LEN) {
		count(&n->stats.rx_dropped, 1);
		return 1;
	}
	return rx_commit(n, (uint32_t)r, NULL, mrg) < 0 ? -2 : 1;
}

/**
 * vnet_rx_pass() - move frames from the TAP to the guest
 * @n:	the device, lock held, on the I/O loop (or the caller's thread
 *	without one)
 *
 * At most VNET_BATCH frames.  The TAP stays polled unless a frame waits
 * (for the guest's buffers: the driver's next notification resumes; for
 * the limiter: its timer does) or the TAP failed.
 */
void vnet_rx_pass(struct vnet *n)
{
	struct virtq *q = &n->t.st.queues[VNET_RXQ];
	if (!vnet_live(n, VNET_RXQ)) {
		vnet_set_rx_poll(n, false);
		return;
	}
	vnet_apply_offload(n);
	if (n->rx_throttled)
		return;
	bool limited = n->rx_timer >= 0 && rl_enabled(&n->rx_rl);
	bool mrg = has(n, VIRTIO_NET_F_MRG_RXBUF);
	bool waiting = false;
	int broken = 0;
	vnet_rx_reset_fifo(n);
	for (unsigned int frames = 0; frames < VNET_BATCH && !broken; frames++) {
		if (!n->frame_pending) {
			if (!limited && (n->rx_big || !mrg)) {
				if (rx_gather(n, VNET_FRAME_MAX, mrg) < 0) {
					broken = 1;
					break;
				}
				if (rx_direct_room(n, mrg)) {
					int k = rx_direct(n, mrg);
					if (k == 1)
						continue;
					broken = k == -2;
					break;
				}
			}
			/* #syscalls: read (I/O thread, the TAP) */
			ssize_t r = read(n->tap.fd, n->frame, VNET_FRAME_MAX);
			if (r < 0) {
				(void)rx_read_failed(n);
				break;
			}
			if ((size_t)r < VNET_HDR_LEN) {
				count(&n->stats.rx_dropped, 1);
				continue;
			}
			n->frame_len = (uint32_t)r;
			n->frame_pending = true;
			n->frame_admitted = false;
		}
		if (limited && !n->frame_admitted) {
			uint64_t wait =
			    rl_take(&n->rx_rl, n->frame_len - VNET_HDR_LEN, 1, vnet_now_ns());
			if (wait && arm_timer(n->rx_timer, wait) == 0) {
				n->rx_throttled = true;
				count(&n->stats.rx_throttled, 1);
				break;
			}
			n->frame_admitted = true;
		}
		if (rx_gather(n, n->frame_len, mrg) < 0) {
			broken = 1;
			break;
		}
		if (rx_fits(n, n->frame_len, mrg)) {
			n->frame_pending = false;
			if (rx_commit(n, n->frame_len, n->frame, mrg) < 0)
				broken = 1;
			continue;
		}
		/* Never room for it: the chains can hold no more (mergeable), or
		 * the guest's buffers are smaller than the frame (not mergeable). */
		if (n->rx_full || (!mrg && rx_first_good(n))) {
			count(&n->stats.rx_dropped, 1);
			n->frame_pending = false;
			continue;
		}
		waiting = true; /* the ring is empty: back-pressure on the TAP */
		break;
	}
	if (broken) {
		vnet_rx_reset_fifo(n);
		virtio_mmio_needs_reset(&n->t);
		vnet_set_rx_poll(n, false);
		return;
	}
	rx_unpop(n);
	vnet_set_rx_poll(n, !waiting && !n->rx_throttled && !n->frame_pending);
	if (virtq_needs_interrupt(q, n->t.cfg.mem))
		virtio_mmio_signal_used(&n->t);
}

/* ---- transmit ----------------------------------------------------------- */

/* Asks the I/O loop to run the queue again on a later pass (the same
 * eventfd a QueueNotify lands on).  Without a VM the rest waits for the
 * driver's next notification. */
static void requeue(struct vnet *n, uint16_t queue)
{
	int fd = n->t.notifiers[queue].fd;
	if (fd >= 0)
		(void)eventfd_write(fd, 1);
}

/* The chain's header copied into n->tx_hdr and checked against the
 * negotiated features @feats, and n->tx_iov made of that copy and the
 * frame's segments.  0, or -EINVAL for a header the TAP must not see. */
static int tx_take_hdr(struct vnet *n, struct virtq_req *r, uint64_t feats)
{
	struct iovec *rest = virtq_req_out(r);
	uint32_t nrest = r->n_out;
	if (iov_to_buf(rest, nrest, 0, &n->tx_hdr, VNET_HDR_LEN) != VNET_HDR_LEN ||
	    vnet_tx_hdr_check(&n->tx_hdr, (uint32_t)(r->out_len - VNET_HDR_LEN), feats) < 0)
		return -EINVAL;
	(void)iov_drop_front(&rest, &nrest, VNET_HDR_LEN);
	n->tx_iov[0] = (struct iovec){ .iov_base = &n->tx_hdr, .iov_len = VNET_HDR_LEN };
	memcpy(n->tx_iov + 1, rest, nrest * sizeof(*rest));
	n->tx_niov = nrest + 1;
	return 0;
}

/**
 * vnet_tx_pass() - send the guest's frames to the TAP
 * @n:	the device, lock held
 *
 * Each chain's readable segments go out in one writev, the header as a
 * copy taken once and checked (vnet_tx_hdr_check: a racing guest cannot
 * change it after), the frame from guest memory.  A chain that is
 * malformed, shorter than a header or longer than a frame is dropped and
 * counted (tx_bad_chains), as is one whose header is refused
 * (tx_bad_headers); a write the TAP refuses is dropped and counted.  Either
 * way the chain goes back to the guest.
 */
void vnet_tx_pass(struct vnet *n)
{
	struct virtq *q = &n->t.st.queues[VNET_TXQ];
	const struct guest_mem *mem = n->t.cfg.mem;
	struct virtq_req *r = &n->req;
	if (n->tx_throttled)
		return;
	bool limited = n->tx_timer >= 0 && rl_enabled(&n->tx_rl);
	static const unsigned int offered[] = { VIRTIO_NET_F_CSUM, VIRTIO_NET_F_HOST_TSO4,
		                                VIRTIO_NET_F_HOST_TSO6, VIRTIO_NET_F_HOST_ECN };
	uint64_t feats = 0;
	for (size_t i = 0; i < sizeof(offered) / sizeof(offered[0]); i++)
		if (has(n, offered[i]))
			feats |= 1ULL << offered[i];
	for (unsigned int chains = 0;; chains++) {
		if (chains >= VNET_BATCH) {
			requeue(n, VNET_TXQ);
			break;
		}
		int rc = virtq_pop(q, mem, r);
		if (rc == 0)
			break;
		if (rc < 0 && !r->has_head) {
			virtio_mmio_needs_reset(&n->t);
			break;
		}
		if (rc < 0 || r->n_out == 0 || r->out_len < VNET_HDR_LEN ||
		    r->out_len > VNET_FRAME_MAX) {
			count(&n->stats.tx_bad_chains, 1);
		} else if (tx_take_hdr(n, r, feats) < 0) {
			count(&n->stats.tx_bad_headers, 1);
		} else {
			uint64_t bytes = r->out_len - VNET_HDR_LEN;
			if (limited) {
				uint64_t wait = rl_take(&n->tx_rl, bytes, 1, vnet_now_ns());
				if (wait && arm_timer(n->tx_timer, wait) == 0) {
					q->last_avail_idx--; /* back to the ring, untouched */
					n->tx_throttled = true;
					count(&n->stats.tx_throttled, 1);
					break;
				}
			}
			/* #syscalls: writev (I/O thread) */
			ssize_t w = writev(n->tap.fd, n->tx_iov, (int)n->tx_niov);
			if (w < 0) {
				count(&n->stats.tx_dropped, 1);
			} else {
				count(&n->stats.tx_packets, 1);
				count(&n->stats.tx_bytes, bytes);
			}
		}
		if (virtq_push(q, mem, r->head, 0) < 0) {
			virtio_mmio_needs_reset(&n->t);
			break;
		}
	}
	if (virtq_needs_interrupt(q, mem))
		virtio_mmio_signal_used(&n->t);
}
