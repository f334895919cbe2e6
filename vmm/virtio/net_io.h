/* virtio-net's data path (net_io.c): the device's state, the receive pass
 * (TAP to guest) and the transmit pass (guest to TAP).  The device's
 * transport callbacks, set-up and public API are net.c's (virtio/net.h). */
#ifndef COVE_VIRTIO_NET_IO_H
#define COVE_VIRTIO_NET_IO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/tap.h"
#include "base/evloop.h"
#include "base/ratelimit.h"
#include "virtio/mmio.h"
#include "virtio/net_hdr.h"
#include "virtio/queue.h"

#define VIRTIO_NET_S_LINK_UP 1

#define VNET_RXQ 0
#define VNET_TXQ 1

#define VNET_QUEUE_SIZE 256
/* The largest frame with its header: a 64 KiB GSO packet plus Ethernet
 * and VLAN headers, with room to spare.  Larger transmit chains are
 * malformed; the receive buffer holds this much. */
#define VNET_FRAME_MAX (VNET_HDR_LEN + 65536 + 128)
/* Frames handled per pass of the I/O loop on either queue, so a busy
 * queue cannot keep the thread from the others. */
#define VNET_BATCH 256
/* Host iovecs gathered over the receive ring at once (UIO_MAXIOV). */
#define VNET_RX_IOV_MAX 1024

#define VNET_DEFAULT_MAC                           \
	{                                          \
		0x06, 0x00, 0xac, 0x10, 0x00, 0x02 \
	}

/* Config space (5.1.4); max_virtqueue_pairs reads 1 (no multiqueue). */
struct virtio_net_config {
	uint8_t mac[6];
	uint16_t status;
	uint16_t max_virtqueue_pairs;
} __attribute__((packed));

/* The device's own plain state beyond the transport: what a snapshot keeps. */
struct vnet_state {
	uint8_t mac[6];
	uint8_t pad[2];
};

/* Host-side limits: bytes/s and packets/s per direction, each with a
 * one-time burst (tokens spent first and never earned back).  0 rates:
 * unlimited.  The buckets themselves hold a tenth of a second's worth. */
struct vnet_limits {
	uint64_t rx_bps, rx_bps_burst, rx_pps, rx_pps_burst;
	uint64_t tx_bps, tx_bps_burst, tx_pps, tx_pps_burst;
};

/* Counters (read any time; relaxed atomics). */
struct vnet_stats {
	uint64_t rx_packets, rx_bytes, rx_dropped, rx_bad_chains, rx_throttled;
	uint64_t tx_packets, tx_bytes, tx_dropped, tx_bad_chains, tx_throttled;
	uint64_t tx_bad_headers; /* refused by vnet_tx_hdr_check (virtio/net_hdr.h) */
};

/* A receive chain taken off the ring during one pass.  Good chains keep
 * their writable segments in rx_iov; a bad one (malformed) has none and is
 * handed back empty once a frame has been placed past it. */
struct rx_chain {
	uint16_t head;
	bool bad;
	uint32_t cap;     /* writable bytes (good chains) */
	uint32_t iov_off; /* its first segment in rx_iov */
	uint32_t n_iov;
};

struct vnet {
	struct virtio_mmio t; /* plain state lives in t.st ... */
	struct vnet_state st; /* ... and here (the MAC) */
	struct tap tap;
	struct virtio_net_config config;
	struct virtq_req req; /* scratch for the chain in hand */
	/* Transmit: the checked copy of the header, then the frame's segments. */
	struct virtio_net_hdr_v1 tx_hdr;
	struct iovec tx_iov[VIRTQ_MAX_SIZE + 1];
	uint32_t tx_niov;

	/* Receive: the chains taken in this pass, in ring order.  [chain0,
	 * nchains) are taken but unused: exactly the ring entries just below
	 * last_avail_idx, so the pass gives them back by stepping it back. */
	struct rx_chain chains[VIRTQ_MAX_SIZE];
	uint32_t chain0, nchains;
	struct iovec rx_iov[VNET_RX_IOV_MAX];
	uint32_t niov;
	uint64_t good_cap; /* bytes the good chains in [chain0, nchains) hold */
	bool rx_full;      /* gathering stopped for lack of room, not of buffers */
	bool rx_big;       /* the last frame was large: try readv straight into the ring */

	/* A frame read from the TAP that waits for room or tokens. */
	uint8_t *frame;
	uint32_t frame_len;
	bool frame_pending;
	bool frame_admitted; /* the limiter let it through already */

	struct evloop *loop;
	bool tap_watched;     /* the TAP fd is on the loop */
	bool rx_poll;         /* the loop polls it for EPOLLIN */
	bool tap_dead;        /* the TAP failed for good: not polled again */
	bool offload_pending; /* features changed: TUNSETOFFLOAD on the I/O loop */
	bool offload_warned;

	struct ratelimit rx_rl, tx_rl;
	int rx_timer, tx_timer; /* -1: not limited */
	bool rx_throttled, tx_throttled;

	struct vnet_stats stats; /* relaxed atomics */
};

/* CLOCK_MONOTONIC in ns, the limiters' clock. */
uint64_t vnet_now_ns(void);

/* Lock held.  Whether the driver runs the device (queues may be used). */
bool vnet_live(const struct vnet *n, uint16_t queue);

/* Starts or stops polling the TAP.  Any thread (epoll_ctl), lock held. */
void vnet_set_rx_poll(struct vnet *n, bool on);

/* Tells the TAP which offloads the guest negotiated: frames it hands us
 * then keep partial checksums and GSO sizes, which the header carries. */
void vnet_apply_offload(struct vnet *n);

/* Forgets the receive chains of the pass (none taken). */
void vnet_rx_reset_fifo(struct vnet *n);

/**
 * vnet_rx_pass() - move frames from the TAP to the guest
 * @n:	the device, lock held, on the I/O loop (or the caller's thread
 *	without one)
 *
 * At most VNET_BATCH frames.  The TAP stays polled unless a frame waits
 * (for the guest's buffers: the driver's next notification resumes; for
 * the limiter: its timer does) or the TAP failed.
 */
void vnet_rx_pass(struct vnet *n);

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
void vnet_tx_pass(struct vnet *n);

#endif
