/* libFuzzer target: a hostile guest driving virtio-net.  The input is a
 * ring setup for both queues, a few frames the "host" sends, plus the
 * contents of guest RAM; the device is brought up through its registers
 * like a driver would, then both queues are notified a few times while the
 * frames arrive.  Descriptors, avail rings and buffers are the fuzzer's, so
 * every descriptor-walking path runs: transmit chains, mergeable and
 * single receive chains, the direct-readv and the copied receive paths,
 * malformed chains, broken rings.  A SOCK_SEQPACKET socketpair stands in
 * for the TAP.
 *
 * Input layout (little-endian):
 *   [0]      rx queue size = 1 << (x % 9), [1] tx queue size likewise
 *   [2]      bit 0: EVENT_IDX, bit 1: MRG_RXBUF, bit 2: INDIRECT_DESC,
 *            bits 3-4: notifies - 1, bits 5-7: frames sent (0-7)
 *   [3]      bit 0: notify tx before rx
 *   [4..15]  rx desc, avail, used, tx desc, avail, used (x * 16, * 2, * 4,
 *            wrapped into RAM)
 *   [16..17] frame length seed (frame i is (seed * (i + 1)) % 70000 + 1)
 *   [18..]   guest RAM from address 0 (the first frames' bytes too) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "arch/x86_64/layout.h"
#include "base/bus.h"
#include "base/guest_mem.h"
#include "virtio/net.h"

#define RAM_SIZE  (256 * 1024)
#define HDR_SIZE  18
#define BASE      0xd0000000ULL
#define MAX_FRAME 70000

static struct guest_mem g_mem;
static uint8_t g_frame[MAX_FRAME];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (gmem_create(&g_mem, RAM_SIZE, X86_MMIO_HOLE) < 0)
		abort();
	return 0;
}

static void wr(struct virtio_mmio *t, uint64_t reg, uint32_t v)
{
	virtio_mmio_access(t, reg, (uint8_t *)&v, sizeof(v), true);
}

static uint32_t rd(struct virtio_mmio *t, uint64_t reg)
{
	uint32_t v;
	virtio_mmio_access(t, reg, (uint8_t *)&v, sizeof(v), false);
	return v;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void drain(int fd)
{
	while (recv(fd, g_frame, sizeof(g_frame), MSG_DONTWAIT) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR_SIZE)
		return 0;
	uint8_t flags = data[2];
	int notifies = ((flags >> 3) & 3) + 1;
	int frames = flags >> 5;
	uint32_t seed = le16(data + 16);

	memset(g_mem.base, 0, RAM_SIZE);
	size_t n = size - HDR_SIZE < RAM_SIZE ? size - HDR_SIZE : RAM_SIZE;
	memcpy(g_mem.base, data + HDR_SIZE, n);

	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv) < 0)
		abort();
	int sz = 1 << 20;
	(void)setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	struct tap tap = { .fd = sv[0], .is_tap = false, .owned = true, .name = "fuzz" };
	struct bus bus = { 0 };
	struct virtio_mmio_cfg cfg = {
		.base = BASE, .gsi = 5, .vm_fd = -1, .mem = &g_mem, .bus = &bus
	};
	static const uint8_t mac[6] = VNET_DEFAULT_MAC;
	struct vnet *net;
	if (vnet_create(&cfg, &tap, mac, &net) < 0)
		abort();
	struct virtio_mmio *t = vnet_transport(net);

	uint64_t feat = VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_NET_F_CSUM) |
	                VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4);
	if (flags & 1)
		feat |= VIRTIO_BIT(VIRTIO_RING_F_EVENT_IDX);
	if (flags & 2)
		feat |= VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF);
	if (flags & 4)
		feat |= VIRTIO_BIT(VIRTIO_RING_F_INDIRECT_DESC);
	wr(t, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(t, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(t, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)feat);
	wr(t, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(t, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(feat >> 32));
	uint32_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	wr(t, VIRTIO_MMIO_STATUS, st);
	for (uint32_t q = 0; q < 2; q++) {
		const uint8_t *r = data + 4 + 6 * q;
		wr(t, VIRTIO_MMIO_QUEUE_SEL, q);
		wr(t, VIRTIO_MMIO_QUEUE_NUM, 1U << (data[q] % 9));
		wr(t, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)((le16(r) * 16ULL) % RAM_SIZE));
		wr(t, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)((le16(r + 2) * 2ULL) % RAM_SIZE));
		wr(t, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)((le16(r + 4) * 4ULL) % RAM_SIZE));
		wr(t, VIRTIO_MMIO_QUEUE_READY, 1);
	}
	wr(t, VIRTIO_MMIO_STATUS, st | VIRTIO_STATUS_DRIVER_OK);

	for (int i = 0; i < frames; i++) {
		size_t len = (seed * (uint32_t)(i + 1)) % MAX_FRAME + 1;
		size_t have = n < len ? n : len;
		memcpy(g_frame, data + HDR_SIZE, have);
		memset(g_frame + have, 0x5a, len - have);
		(void)send(sv[1], g_frame, len, MSG_DONTWAIT);
	}
	for (int i = 0; i < notifies; i++) {
		uint32_t first = (data[3] & 1) ? VNET_TXQ : VNET_RXQ;
		wr(t, VIRTIO_MMIO_QUEUE_NOTIFY, first);
		wr(t, VIRTIO_MMIO_QUEUE_NOTIFY, first ^ 1);
		vnet_poll_rx(net);
		drain(sv[1]);
		wr(t, VIRTIO_MMIO_INTERRUPT_ACK, rd(t, VIRTIO_MMIO_INTERRUPT_STATUS));
	}
	for (uint32_t off = 0; off < sizeof(struct virtio_net_config) + 8; off += 2)
		(void)rd(t, VIRTIO_MMIO_CONFIG + off);
	wr(t, VIRTIO_MMIO_STATUS, 0);
	vnet_destroy(net);
	close(sv[1]);
	return 0;
}
