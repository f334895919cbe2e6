/* Unit tests: virtio-net driven the way a guest driver would (registers
 * through the bus, rings in guest RAM), with a SOCK_SEQPACKET socketpair
 * standing in for the TAP (one datagram per frame, vnet header included).
 * Transmit chains go out whole in one write; malformed chains are dropped,
 * counted and handed back without stopping the device; received frames
 * spread over mergeable buffers with num_buffers set; without buffers the
 * TAP is not polled until the driver adds some; the rate limiter defers
 * with its timer; the MAC survives save/restore. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "arch/x86_64/layout.h"
#include "base/bus.h"
#include "base/evloop.h"
#include "base/guest_mem.h"
#include "base/ratelimit.h"
#include "unit.h"
#include "virtio/net.h"
#include "virtio/net_hdr.h"
#include "virtio_driver.h"

#define RAM_SIZE (4 * 1024 * 1024)
#define BASE     0xd0000000ULL
#define QSIZE    16
#define BUF_GPA  0x10000
#define BIG_GPA  0x200000 /* room for a 128 KiB buffer */

static const uint64_t ring_gpa[2][3] = {
	{ 0x1000, 0x2000, 0x3000 }, /* rx: desc, avail, used */
	{ 0x4000, 0x5000, 0x6000 }, /* tx */
};

struct drv {
	struct guest_mem mem;
	struct bus bus;
	struct evloop loop;
	bool with_loop;
	struct vnet *net;
	int peer; /* the "host" end of the stand-in TAP */
	struct vdrv v;
};

static void drv_init_opts(struct drv *d, uint64_t drop, bool with_loop)
{
	memset(d, 0, sizeof(*d));
	ck_assert_int_eq(gmem_create(&d->mem, RAM_SIZE, X86_MMIO_HOLE), 0);
	int sv[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	/* Room for a few 64 KiB frames in flight. */
	int sz = 1 << 20;
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	(void)setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	d->peer = sv[1];
	struct tap t = { .fd = sv[0], .is_tap = false, .owned = true, .name = "pair" };
	d->with_loop = with_loop;
	if (with_loop)
		ck_assert_int_eq(evloop_init(&d->loop), 0);
	struct virtio_mmio_cfg cfg = { .base = BASE,
		                       .gsi = 5,
		                       .vm_fd = -1,
		                       .mem = &d->mem,
		                       .bus = &d->bus,
		                       .loop = with_loop ? &d->loop : NULL };
	static const uint8_t mac[6] = VNET_DEFAULT_MAC;
	ck_assert_int_eq(vnet_create(&cfg, &t, mac, &d->net), 0);
	ck_assert_int_eq(t.fd, -1); /* the device's now */
	vdrv_init(&d->v, &d->mem, &d->bus, BASE);
	for (unsigned int q = 0; q < 2; q++)
		vdrv_ring(&d->v, q, ring_gpa[q][0], ring_gpa[q][1], ring_gpa[q][2], QSIZE);
	vdrv_up(&d->v, ~drop, VNET_QUEUE_SIZE);
}

static void drv_init(struct drv *d)
{
	drv_init_opts(d, 0, false);
}

static void drv_fini(struct drv *d)
{
	vnet_destroy(d->net);
	if (d->with_loop)
		evloop_destroy(&d->loop);
	close(d->peer);
	gmem_destroy(&d->mem);
}

static struct vnet_stats stats(struct drv *d)
{
	struct vnet_stats s;
	vnet_get_stats(d->net, &s);
	return s;
}

static bool needs_reset(struct drv *d)
{
	return vdrv_rd(&d->v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET;
}

static void fill_pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* A frame of `len` bytes (header included) from the host side. */
static void host_send(struct drv *d, size_t len, uint8_t seed)
{
	static uint8_t buf[VNET_FRAME_MAX];
	ck_assert_uint_le(len, sizeof(buf));
	memset(buf, 0, VNET_HDR_LEN);
	fill_pattern(buf + VNET_HDR_LEN, len - VNET_HDR_LEN, seed);
	ck_assert_int_eq(send(d->peer, buf, len, 0), (ssize_t)len);
}

static ssize_t host_recv(struct drv *d, uint8_t *buf, size_t len)
{
	return recv(d->peer, buf, len, MSG_DONTWAIT);
}

/* ---- transmit ---- */

START_TEST(test_config_space)
{
	struct drv d;
	drv_init(&d);
	uint8_t mac[6];
	for (int i = 0; i < 6; i++) {
		uint8_t b;
		ck_assert(bus_access(&d.bus, BASE + VIRTIO_MMIO_CONFIG + i, &b, 1, false));
		mac[i] = b;
	}
	static const uint8_t want[6] = VNET_DEFAULT_MAC;
	ck_assert_mem_eq(mac, want, 6);
	uint16_t status;
	ck_assert(bus_access(&d.bus, BASE + VIRTIO_MMIO_CONFIG + 6, (uint8_t *)&status, 2, false));
	ck_assert_uint_eq(status, VIRTIO_NET_S_LINK_UP);
	ck_assert_uint_eq(vdrv_rd(&d.v, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_NET);
	vdrv_wr(&d.v, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	uint32_t f = vdrv_rd(&d.v, VIRTIO_MMIO_DEVICE_FEATURES);
	ck_assert(f & (1u << VIRTIO_NET_F_MRG_RXBUF));
	ck_assert(f & (1u << VIRTIO_NET_F_HOST_TSO4));
	ck_assert(f & (1u << VIRTIO_NET_F_GUEST_TSO6));
	ck_assert(f & (1u << VIRTIO_NET_F_MAC));
	drv_fini(&d);
}
END_TEST

START_TEST(test_tx_frame_goes_out_whole)
{
	struct drv d;
	drv_init(&d);
	/* Header and payload in separate descriptors, payload split in two. */
	/* TCPv4 GSO, checksum partial at 34 + 16, headers 54 bytes, MSS 1448. */
	uint8_t hdr[VNET_HDR_LEN] = { 1, 1, 54, 0, 0xa8, 0x05, 34, 0, 16, 0, 0, 0 };
	uint8_t payload[1500];
	fill_pattern(payload, sizeof(payload), 3);
	ck_assert_int_eq(gmem_write(&d.mem, BUF_GPA, hdr, sizeof(hdr)), 0);
	ck_assert_int_eq(gmem_write(&d.mem, BUF_GPA + 0x1000, payload, 1000), 0);
	ck_assert_int_eq(gmem_write(&d.mem, BUF_GPA + 0x2000, payload + 1000, 500), 0);
	vdrv_put_desc(&d.v, VNET_TXQ, 0, BUF_GPA, VNET_HDR_LEN, VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, VNET_TXQ, 1, BUF_GPA + 0x1000, 1000, VIRTQ_DESC_F_NEXT, 2);
	vdrv_put_desc(&d.v, VNET_TXQ, 2, BUF_GPA + 0x2000, 500, 0, 0);
	vdrv_offer(&d.v, VNET_TXQ, 0);
	vdrv_notify(&d.v, VNET_TXQ);
	uint8_t got[2048];
	ssize_t n = host_recv(&d, got, sizeof(got));
	ck_assert_int_eq(n, VNET_HDR_LEN + 1500);
	ck_assert_mem_eq(got, hdr, VNET_HDR_LEN);
	ck_assert_mem_eq(got + VNET_HDR_LEN, payload, 1500);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_TXQ), 1);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_TXQ, 0).id, 0);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_TXQ, 0).len, 0);
	struct vnet_stats s = stats(&d);
	ck_assert_uint_eq(s.tx_packets, 1);
	ck_assert_uint_eq(s.tx_bytes, 1500);
	drv_fini(&d);
}
END_TEST

START_TEST(test_tx_malformed_chains_dropped)
{
	struct drv d;
	drv_init(&d);
	/* 0: shorter than a header. */
	vdrv_put_desc(&d.v, VNET_TXQ, 0, BUF_GPA, 4, 0, 0);
	/* 1: outside guest RAM. */
	vdrv_put_desc(&d.v, VNET_TXQ, 1, RAM_SIZE - 8, 64, 0, 0);
	/* 2 -> 3 -> 2: a loop. */
	vdrv_put_desc(&d.v, VNET_TXQ, 2, BUF_GPA, 64, VIRTQ_DESC_F_NEXT, 3);
	vdrv_put_desc(&d.v, VNET_TXQ, 3, BUF_GPA, 64, VIRTQ_DESC_F_NEXT, 2);
	/* 4: only a writable buffer. */
	vdrv_put_desc(&d.v, VNET_TXQ, 4, BUF_GPA, 64, VIRTQ_DESC_F_WRITE, 0);
	/* 5: a next index past the table. */
	vdrv_put_desc(&d.v, VNET_TXQ, 5, BUF_GPA, 64, VIRTQ_DESC_F_NEXT, 200);
	/* 6: longer than any frame (two 40 KiB halves). */
	vdrv_put_desc(&d.v, VNET_TXQ, 6, BIG_GPA, 40000, VIRTQ_DESC_F_NEXT, 7);
	vdrv_put_desc(&d.v, VNET_TXQ, 7, BIG_GPA, 40000, 0, 0);
	/* 8: a good one after all of them. */
	vdrv_put_desc(&d.v, VNET_TXQ, 8, BUF_GPA, 100, 0, 0);
	for (uint16_t h = 0; h <= 8; h++)
		if (h != 3 && h != 7)
			vdrv_offer(&d.v, VNET_TXQ, h);
	vdrv_notify(&d.v, VNET_TXQ);
	ck_assert(!needs_reset(&d));
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_TXQ), 7);
	for (uint16_t i = 0; i < 7; i++)
		ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_TXQ, i).len, 0);
	uint8_t got[256];
	ck_assert_int_eq(host_recv(&d, got, sizeof(got)), 100);
	ck_assert_int_lt(host_recv(&d, got, sizeof(got)), 0); /* nothing else went out */
	struct vnet_stats s = stats(&d);
	ck_assert_uint_eq(s.tx_bad_chains, 6);
	ck_assert_uint_eq(s.tx_packets, 1);
	drv_fini(&d);
}
END_TEST

/* The transmit header check alone, on fabricated headers. */
START_TEST(test_tx_hdr_check)
{
	const uint64_t all = 1ULL << VIRTIO_NET_F_CSUM | 1ULL << VIRTIO_NET_F_HOST_TSO4 |
	                     1ULL << VIRTIO_NET_F_HOST_TSO6 | 1ULL << VIRTIO_NET_F_HOST_ECN;
	struct virtio_net_hdr_v1 plain = { 0 };
	struct virtio_net_hdr_v1 tso = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		                         .gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
		                         .hdr_len = htole16(54),
		                         .gso_size = htole16(1448),
		                         .csum_start = htole16(34),
		                         .csum_offset = htole16(16) };
	ck_assert_int_eq(vnet_tx_hdr_check(&plain, 60, 0), 0);
	ck_assert_int_eq(vnet_tx_hdr_check(&plain, 13, all), -EINVAL); /* a runt */
	ck_assert_int_eq(vnet_tx_hdr_check(&tso, 65000, all), 0);
	struct virtio_net_hdr_v1 h = tso;
	h.gso_type = VIRTIO_NET_HDR_GSO_TCPV6 | VIRTIO_NET_HDR_GSO_ECN;
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 65000, all), 0);
	/* Not negotiated. */
	ck_assert_int_eq(vnet_tx_hdr_check(&tso, 65000, all & ~(1ULL << VIRTIO_NET_F_HOST_TSO4)),
	                 -EINVAL);
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 65000, all & ~(1ULL << VIRTIO_NET_F_HOST_ECN)),
	                 -EINVAL);
	ck_assert_int_eq(vnet_tx_hdr_check(&tso, 65000, all & ~(1ULL << VIRTIO_NET_F_CSUM)),
	                 -EINVAL);
	/* GSO types never offered, unknown ones, ECN without GSO. */
	static const uint8_t bad_types[] = {
		VIRTIO_NET_HDR_GSO_UDP, VIRTIO_NET_HDR_GSO_UDP_L4, 2, 6, 0x7f,
		VIRTIO_NET_HDR_GSO_ECN
	};
	for (size_t i = 0; i < sizeof(bad_types); i++) {
		h = tso;
		h.gso_type = bad_types[i];
		ck_assert_msg(vnet_tx_hdr_check(&h, 65000, all) == -EINVAL, "gso_type %u",
		              bad_types[i]);
	}
	/* Flags of the receive side, unknown flags. */
	static const uint8_t bad_flags[] = { 2, 3, 4, 0x80 };
	for (size_t i = 0; i < sizeof(bad_flags); i++) {
		h = plain;
		h.flags = bad_flags[i];
		ck_assert_msg(vnet_tx_hdr_check(&h, 1500, all) == -EINVAL, "flags %u",
		              bad_flags[i]);
	}
	/* Offsets against the frame's length. */
	h = tso;
	h.csum_start = htole16(1490);
	h.csum_offset = htole16(16);
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 1500, all), -EINVAL);
	h.csum_start = htole16(1482); /* 1482 + 16 + 2 == 1500: the last byte */
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 1500, all), 0);
	h.csum_start = htole16(0xffff);
	h.csum_offset = htole16(0xffff); /* no 16-bit wrap */
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 65000, all), -EINVAL);
	h = tso;
	h.csum_start = htole16(6); /* inside the Ethernet header */
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 1500, all), -EINVAL);
	h = tso;
	h.hdr_len = htole16(1501);
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 1500, all), -EINVAL);
	h = plain;
	h.hdr_len = htole16(61);
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 60, all), -EINVAL);
	h = tso;
	h.gso_size = 0;
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 1500, all), -EINVAL);
	h.gso_size = htole16(1501);
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 1500, all), -EINVAL);
	h = tso;
	h.flags = 0; /* GSO without a partial checksum */
	ck_assert_int_eq(vnet_tx_hdr_check(&h, 65000, all), -EINVAL);
}
END_TEST

/* A refused header drops that frame alone, counted; a header split over
 * two descriptors still goes out whole. */
START_TEST(test_tx_bad_header_dropped)
{
	struct drv d;
	drv_init_opts(&d, 1ULL << VIRTIO_NET_F_HOST_TSO6, false);
	uint8_t bad[VNET_HDR_LEN] = { 1, VIRTIO_NET_HDR_GSO_UDP, 54, 0, 0xa8, 0x05, 34, 0, 6, 0 };
	uint8_t tso6[VNET_HDR_LEN] = {
		1, VIRTIO_NET_HDR_GSO_TCPV6, 74, 0, 0xa0, 0x05, 54, 0, 16, 0
	};
	uint8_t good[VNET_HDR_LEN] = {
		1, VIRTIO_NET_HDR_GSO_TCPV4, 54, 0, 0xa8, 0x05, 34, 0, 16, 0
	};
	uint8_t payload[1500];
	fill_pattern(payload, sizeof(payload), 5);
	ck_assert_int_eq(gmem_write(&d.mem, BUF_GPA, bad, sizeof(bad)), 0);
	ck_assert_int_eq(gmem_write(&d.mem, BUF_GPA + 0x100, tso6, sizeof(tso6)), 0);
	ck_assert_int_eq(gmem_write(&d.mem, BUF_GPA + 0x200, good, sizeof(good)), 0);
	ck_assert_int_eq(gmem_write(&d.mem, BUF_GPA + 0x1000, payload, sizeof(payload)), 0);
	vdrv_put_desc(&d.v, VNET_TXQ, 0, BUF_GPA, VNET_HDR_LEN, VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, VNET_TXQ, 1, BUF_GPA + 0x1000, 1500, 0, 0);
	/* TCPv6 GSO: the driver did not take HOST_TSO6. */
	vdrv_put_desc(&d.v, VNET_TXQ, 2, BUF_GPA + 0x100, VNET_HDR_LEN, VIRTQ_DESC_F_NEXT, 3);
	vdrv_put_desc(&d.v, VNET_TXQ, 3, BUF_GPA + 0x1000, 1500, 0, 0);
	/* The good header in two pieces of 5 and 7 bytes. */
	vdrv_put_desc(&d.v, VNET_TXQ, 4, BUF_GPA + 0x200, 5, VIRTQ_DESC_F_NEXT, 5);
	vdrv_put_desc(&d.v, VNET_TXQ, 5, BUF_GPA + 0x205, 7, VIRTQ_DESC_F_NEXT, 6);
	vdrv_put_desc(&d.v, VNET_TXQ, 6, BUF_GPA + 0x1000, 1500, 0, 0);
	vdrv_offer(&d.v, VNET_TXQ, 0);
	vdrv_offer(&d.v, VNET_TXQ, 2);
	vdrv_offer(&d.v, VNET_TXQ, 4);
	vdrv_notify(&d.v, VNET_TXQ);
	ck_assert(!needs_reset(&d));
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_TXQ), 3);
	uint8_t got[2048];
	ck_assert_int_eq(host_recv(&d, got, sizeof(got)), VNET_HDR_LEN + 1500);
	ck_assert_mem_eq(got, good, VNET_HDR_LEN);
	ck_assert_mem_eq(got + VNET_HDR_LEN, payload, 1500);
	ck_assert_int_lt(host_recv(&d, got, sizeof(got)), 0); /* nothing else went out */
	struct vnet_stats s = stats(&d);
	ck_assert_uint_eq(s.tx_bad_headers, 2);
	ck_assert_uint_eq(s.tx_bad_chains, 0);
	ck_assert_uint_eq(s.tx_packets, 1);
	drv_fini(&d);
}
END_TEST

START_TEST(test_broken_ring_needs_reset)
{
	struct drv d;
	drv_init(&d);
	vdrv_put16(&d.v, ring_gpa[VNET_TXQ][1] + 2, QSIZE + 5); /* avail idx jumps past the ring */
	vdrv_notify(&d.v, VNET_TXQ);
	ck_assert(needs_reset(&d));
	drv_fini(&d);
}
END_TEST

/* ---- receive ---- */

/* Offers n single-buffer receive chains of len bytes from BUF_GPA. */
static void offer_rx(struct drv *d, uint16_t first, unsigned int n, uint32_t len)
{
	for (unsigned int i = 0; i < n; i++) {
		uint16_t h = (uint16_t)(first + i);
		vdrv_put_desc(&d->v, VNET_RXQ, h, BUF_GPA + 0x1000ULL * h, len, VIRTQ_DESC_F_WRITE,
		              0);
		vdrv_offer(&d->v, VNET_RXQ, h);
	}
}

static void read_rx(struct drv *d, uint16_t head, uint64_t off, void *buf, size_t len)
{
	ck_assert_int_eq(gmem_read(&d->mem, BUF_GPA + 0x1000ULL * head + off, buf, len), 0);
}

START_TEST(test_rx_mergeable_spreads_frame)
{
	struct drv d;
	drv_init(&d);
	host_send(&d, 3000, 9);
	offer_rx(&d, 0, 4, 1024);
	vdrv_notify(&d.v, VNET_RXQ);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 3);
	uint32_t lens[3] = { 1024, 1024, 3000 - 2048 };
	for (uint16_t i = 0; i < 3; i++) {
		ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, i).id, i);
		ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, i).len, lens[i]);
	}
	struct virtio_net_hdr_v1 h;
	read_rx(&d, 0, 0, &h, sizeof(h));
	ck_assert_uint_eq(h.num_buffers, 3);
	uint8_t want[3000], got[3000];
	fill_pattern(want, sizeof(want), 9);
	read_rx(&d, 0, VNET_HDR_LEN, got, 1024 - VNET_HDR_LEN);
	read_rx(&d, 1, 0, got + 1024 - VNET_HDR_LEN, 1024);
	read_rx(&d, 2, 0, got + 2048 - VNET_HDR_LEN, 3000 - 2048);
	ck_assert_mem_eq(got, want, 3000 - VNET_HDR_LEN);
	/* The fourth buffer went back to the ring: the next frame gets it. */
	host_send(&d, 200, 1);
	vnet_poll_rx(d.net);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 4);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 3).id, 3);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 3).len, 200);
	read_rx(&d, 3, 0, &h, sizeof(h));
	ck_assert_uint_eq(h.num_buffers, 1);
	ck_assert_uint_eq(stats(&d).rx_packets, 2);
	ck_assert_uint_eq(stats(&d).rx_bytes, 3000 + 200 - 2 * VNET_HDR_LEN);
	drv_fini(&d);
}
END_TEST

START_TEST(test_rx_backpressure_without_buffers)
{
	struct drv d;
	drv_init(&d);
	host_send(&d, 500, 1);
	host_send(&d, 600, 2);
	vdrv_notify(&d.v, VNET_RXQ); /* no buffers yet: one frame waits, polling stops */
	ck_assert(!vnet_rx_polling(d.net));
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 0);
	vnet_poll_rx(d.net); /* not polled: nothing happens */
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 0);
	offer_rx(&d, 0, 1, 2048);
	vdrv_notify(&d.v, VNET_RXQ);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 1);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 0).len, 500);
	uint8_t got[600], want[600];
	fill_pattern(want, sizeof(want), 1);
	read_rx(&d, 0, VNET_HDR_LEN, got, 500 - VNET_HDR_LEN);
	ck_assert_mem_eq(got, want, 500 - VNET_HDR_LEN);
	ck_assert(!vnet_rx_polling(d.net)); /* the second frame waits now */
	offer_rx(&d, 1, 1, 2048);
	vdrv_notify(&d.v, VNET_RXQ);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 2);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 1).len, 600);
	fill_pattern(want, sizeof(want), 2);
	read_rx(&d, 1, VNET_HDR_LEN, got, 600 - VNET_HDR_LEN);
	ck_assert_mem_eq(got, want, 600 - VNET_HDR_LEN);
	ck_assert(vnet_rx_polling(d.net)); /* nothing waits: polled again */
	ck_assert_uint_eq(stats(&d).rx_dropped, 0);
	drv_fini(&d);
}
END_TEST

START_TEST(test_rx_not_mergeable)
{
	struct drv d;
	drv_init_opts(&d, VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF), false);
	offer_rx(&d, 0, 2, 2048);
	host_send(&d, 1514 + VNET_HDR_LEN, 4);
	host_send(&d, 4000, 5); /* larger than any buffer: dropped */
	host_send(&d, 100, 6);
	vdrv_notify(&d.v, VNET_RXQ);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 2);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 0).len, 1514 + VNET_HDR_LEN);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 1).len, 100);
	struct virtio_net_hdr_v1 h;
	read_rx(&d, 0, 0, &h, sizeof(h));
	ck_assert_uint_eq(h.num_buffers, 1);
	ck_assert_uint_eq(stats(&d).rx_dropped, 1);
	drv_fini(&d);
}
END_TEST

START_TEST(test_rx_malformed_chains)
{
	struct drv d;
	drv_init(&d);
	/* 0: a readable buffer, 1: too short for a header, 2: outside RAM,
	 * 3: good. */
	vdrv_put_desc(&d.v, VNET_RXQ, 0, BUF_GPA, 2048, 0, 0);
	vdrv_put_desc(&d.v, VNET_RXQ, 1, BUF_GPA + 0x1000, 8, VIRTQ_DESC_F_WRITE, 0);
	vdrv_put_desc(&d.v, VNET_RXQ, 2, RAM_SIZE - 16, 2048, VIRTQ_DESC_F_WRITE, 0);
	vdrv_put_desc(&d.v, VNET_RXQ, 3, BUF_GPA + 0x3000, 2048, VIRTQ_DESC_F_WRITE, 0);
	for (uint16_t h = 0; h < 4; h++)
		vdrv_offer(&d.v, VNET_RXQ, h);
	host_send(&d, 300, 7);
	vdrv_notify(&d.v, VNET_RXQ);
	ck_assert(!needs_reset(&d));
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 4);
	/* The frame first (its buffers stay consecutive), then the bad ones. */
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 0).id, 3);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 0).len, 300);
	for (uint16_t i = 1; i < 4; i++) {
		ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, i).id, i - 1);
		ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, i).len, 0);
	}
	ck_assert_uint_eq(stats(&d).rx_bad_chains, 3);
	drv_fini(&d);
}
END_TEST

START_TEST(test_rx_direct_into_large_buffer)
{
	struct drv d;
	drv_init(&d);
	/* One chain bigger than any frame: readv straight into it. */
	vdrv_put_desc(&d.v, VNET_RXQ, 0, BIG_GPA, 70000, VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, VNET_RXQ, 1, BIG_GPA + 70000, 1000, VIRTQ_DESC_F_WRITE, 0);
	vdrv_offer(&d.v, VNET_RXQ, 0);
	vdrv_notify(&d.v, VNET_RXQ);
	host_send(&d, 65000, 8);
	vnet_poll_rx(d.net);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 1);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 0).len, 65000);
	static uint8_t got[65000], want[65000];
	fill_pattern(want, sizeof(want), 8);
	ck_assert_int_eq(gmem_read(&d.mem, BIG_GPA + VNET_HDR_LEN, got, 65000 - VNET_HDR_LEN), 0);
	ck_assert_mem_eq(got, want, 65000 - VNET_HDR_LEN);
	struct virtio_net_hdr_v1 h;
	ck_assert_int_eq(gmem_read(&d.mem, BIG_GPA, &h, sizeof(h)), 0);
	ck_assert_uint_eq(h.num_buffers, 1);
	/* A large frame came: the next one is read straight into the ring. */
	vdrv_put_desc(&d.v, VNET_RXQ, 2, BIG_GPA + 0x20000, 70000, VIRTQ_DESC_F_WRITE, 0);
	vdrv_offer(&d.v, VNET_RXQ, 2);
	vdrv_notify(&d.v, VNET_RXQ);
	host_send(&d, 64000, 9);
	vnet_poll_rx(d.net);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 2);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 1).id, 2);
	ck_assert_uint_eq(vdrv_used_elem(&d.v, VNET_RXQ, 1).len, 64000);
	fill_pattern(want, sizeof(want), 9);
	ck_assert_int_eq(
	    gmem_read(&d.mem, BIG_GPA + 0x20000 + VNET_HDR_LEN, got, 64000 - VNET_HDR_LEN), 0);
	ck_assert_mem_eq(got, want, 64000 - VNET_HDR_LEN);
	ck_assert_int_eq(gmem_read(&d.mem, BIG_GPA + 0x20000, &h, sizeof(h)), 0);
	ck_assert_uint_eq(h.num_buffers, 1);
	drv_fini(&d);
}
END_TEST

/* ---- rate limits ---- */

static uint64_t mono_ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

START_TEST(test_tx_rate_limit_defers_with_timer)
{
	struct drv d;
	drv_init_opts(&d, 0, true);
	/* 20 packets/s: the bucket holds 2, plus a one-time burst of 1. */
	const struct vnet_limits l = { .tx_pps = 20, .tx_pps_burst = 1 };
	ck_assert_int_eq(vnet_set_limits(d.net, &l), 0);
	for (uint16_t h = 0; h < 5; h++) {
		vdrv_put_desc(&d.v, VNET_TXQ, h, BUF_GPA, 64, 0, 0);
		vdrv_offer(&d.v, VNET_TXQ, h);
	}
	uint64_t t0 = mono_ms_now();
	vdrv_notify(&d.v, VNET_TXQ);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_TXQ), 3); /* bucket and one-time burst */
	ck_assert_uint_eq(stats(&d).tx_throttled, 1);
	/* The rest go as the timer fires (every 50 ms), none before. */
	for (int i = 0; i < 100 && vdrv_used_idx(&d.v, VNET_TXQ) < 5; i++)
		ck_assert_int_ge(evloop_run_once(&d.loop, 200), 0);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_TXQ), 5);
	ck_assert_uint_ge(mono_ms_now() - t0, 80);
	ck_assert_uint_eq(stats(&d).tx_packets, 5);
	ck_assert_uint_ge(stats(&d).tx_throttled, 2);
	drv_fini(&d);
}
END_TEST

START_TEST(test_rx_rate_limit_defers_with_timer)
{
	struct drv d;
	drv_init_opts(&d, 0, true);
	/* 10 KB/s: the bucket holds 1000 bytes, no one-time burst. */
	const struct vnet_limits l = { .rx_bps = 10000 };
	ck_assert_int_eq(vnet_set_limits(d.net, &l), 0);
	offer_rx(&d, 0, 4, 2048);
	host_send(&d, 900 + VNET_HDR_LEN, 1);
	host_send(&d, 900 + VNET_HDR_LEN, 2);
	uint64_t t0 = mono_ms_now();
	vdrv_notify(&d.v, VNET_RXQ);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 1);
	ck_assert(!vnet_rx_polling(d.net)); /* the second frame waits for tokens */
	for (int i = 0; i < 100 && vdrv_used_idx(&d.v, VNET_RXQ) < 2; i++)
		ck_assert_int_ge(evloop_run_once(&d.loop, 200), 0);
	ck_assert_uint_eq(vdrv_used_idx(&d.v, VNET_RXQ), 2);
	ck_assert_uint_ge(mono_ms_now() - t0, 60); /* 800 missing bytes at 10 KB/s */
	ck_assert_uint_eq(stats(&d).rx_throttled, 1);
	drv_fini(&d);
}
END_TEST

START_TEST(test_one_time_burst)
{
	struct ratelimit rl;
	rl_init(&rl, 0, 0, 10, 0, 0); /* 10 ops/s: a bucket of 1 */
	rl_add_one_time_burst(&rl, 0, 5);
	for (int i = 0; i < 6; i++)
		ck_assert_uint_eq(rl_take(&rl, 0, 1, 0), 0);
	ck_assert_uint_gt(rl_take(&rl, 0, 1, 0), 0);
	/* Refilled, the burst is not back: one op per 100 ms. */
	ck_assert_uint_eq(rl_take(&rl, 0, 1, 100000000ULL), 0);
	ck_assert_uint_gt(rl_take(&rl, 0, 1, 100000000ULL), 0);
	ck_assert_uint_eq(rl_take(&rl, 0, 1, 10ULL * 1000000000ULL), 0);
	ck_assert_uint_gt(rl_take(&rl, 0, 1, 10ULL * 1000000000ULL), 0);
}
END_TEST

START_TEST(test_save_restore_mac)
{
	struct drv d;
	drv_init(&d);
	struct vnet_state st;
	vnet_save(d.net, &st);
	static const uint8_t want[6] = VNET_DEFAULT_MAC;
	ck_assert_mem_eq(st.mac, want, 6);
	st.mac[5] = 0x77;
	vnet_restore(d.net, &st);
	uint8_t b;
	ck_assert(bus_access(&d.bus, BASE + VIRTIO_MMIO_CONFIG + 5, &b, 1, false));
	ck_assert_uint_eq(b, 0x77);
	/* A reset and a new bring-up keep it, and the device works again. */
	vdrv_wr(&d.v, VIRTIO_MMIO_STATUS, 0);
	d.v.q[0].avail_idx = d.v.q[1].avail_idx = 0;
	vdrv_put16(&d.v, ring_gpa[VNET_TXQ][1] + 2, 0);
	vdrv_put16(&d.v, ring_gpa[VNET_RXQ][1] + 2, 0);
	vdrv_up(&d.v, ~0ULL, VNET_QUEUE_SIZE);
	ck_assert(bus_access(&d.bus, BASE + VIRTIO_MMIO_CONFIG + 5, &b, 1, false));
	ck_assert_uint_eq(b, 0x77);
	vdrv_put_desc(&d.v, VNET_TXQ, 0, BUF_GPA, 64, 0, 0);
	vdrv_offer(&d.v, VNET_TXQ, 0);
	vdrv_notify(&d.v, VNET_TXQ);
	ck_assert_uint_eq(stats(&d).tx_packets, 1);
	drv_fini(&d);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("net");
	TCase *tc = tcase_create("net");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_config_space);
	tcase_add_test(tc, test_tx_frame_goes_out_whole);
	tcase_add_test(tc, test_tx_malformed_chains_dropped);
	tcase_add_test(tc, test_tx_hdr_check);
	tcase_add_test(tc, test_tx_bad_header_dropped);
	tcase_add_test(tc, test_broken_ring_needs_reset);
	tcase_add_test(tc, test_rx_mergeable_spreads_frame);
	tcase_add_test(tc, test_rx_backpressure_without_buffers);
	tcase_add_test(tc, test_rx_not_mergeable);
	tcase_add_test(tc, test_rx_malformed_chains);
	tcase_add_test(tc, test_rx_direct_into_large_buffer);
	tcase_add_test(tc, test_tx_rate_limit_defers_with_timer);
	tcase_add_test(tc, test_rx_rate_limit_defers_with_timer);
	tcase_add_test(tc, test_one_time_burst);
	tcase_add_test(tc, test_save_restore_mac);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
