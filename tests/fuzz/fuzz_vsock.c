/* libFuzzer target: a hostile guest (and hostile host clients) driving
 * virtio-vsock.  The device runs against real Unix sockets in a temp dir:
 * its listener, plus a host listener for guest connections to port
 * FUZZ_PORT.  The input is a script of steps; the rings are well formed
 * (fuzz_virtq_blk covers ring parsing) and the fuzzer owns everything in
 * them: packet headers, payloads, how they are split into descriptors, rx
 * buffer sizes, host traffic.
 *
 * Input layout:
 *   [0]   bit 0: negotiate EVENT_IDX; bit 1: steer headers (src_cid = guest,
 *         dst_cid = host, type = stream, ports folded onto live ones) so
 *         the fuzzer spends its time in the protocol, not on RSTs
 *   then steps, each [kind][len][len bytes]:
 *     kind % 8 == 0  tx packet; kind >> 3 picks the descriptor split
 *                 1  post rx buffers: [count][size] (several pairs)
 *                 2  host client connects to the listener and writes data
 *                 3  host socket (client or accepted) writes data
 *                 4  host socket shuts down (data[0] & 1: write side) or closes
 *                 5  turn the I/O loop; accept on the host listener
 *                 6  post an event buffer and reset the transport
 *                 7  driver reset (status 0) and bring-up again */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "arch/x86_64/layout.h"
#include "base/bus.h"
#include "base/evloop.h"
#include "base/guest_mem.h"
#include "virtio/vsock.h"

#define RAM_SIZE   (2 * 1024 * 1024)
#define BASE       0xd0000000ULL
#define GUEST_CID  3
#define FUZZ_PORT  5000
#define QSIZE_RX   128 /* two descriptors per buffer */
#define QSIZE_TX   256 /* three descriptors per packet */
#define QSIZE_EV   8
#define MAX_CHAINS 64
#define Q_RING(q)  (0x1000ULL + (q)*0x4000ULL)
#define DESC(q)    Q_RING(q)
#define AVAIL(q)   (Q_RING(q) + 0x1000)
#define USED(q)    (Q_RING(q) + 0x2000)
#define TXBUF(s)   (0x40000ULL + (s)*0x1000ULL)
#define TXBUF_SIZE 0x1000
#define RXBUF(s)   (0x80000ULL + (s)*0x2000ULL)
#define RXBUF_SIZE 0x2000
#define EVBUF(s)   (0x20000ULL + (s)*0x10ULL)
#define MAX_SOCKS  16
#define HDR_LEN    ((uint32_t)sizeof(struct virtio_vsock_hdr))

static struct guest_mem g_mem;
static struct evloop g_loop;
static char g_dir[64];
static char g_path[96];
static int g_host_listener = -1;

static char g_host_path[112];

static void cleanup(void)
{
	unlink(g_host_path);
	rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (gmem_create(&g_mem, RAM_SIZE, X86_MMIO_HOLE) < 0 || evloop_init(&g_loop) < 0)
		abort();
	snprintf(g_dir, sizeof(g_dir), "/tmp/cove-fuzz-vsock-XXXXXX");
	if (!mkdtemp(g_dir))
		abort(); /* the harness, not the device: no dir, no fuzzing */
	snprintf(g_path, sizeof(g_path), "%s/v.sock", g_dir);
	g_host_listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", g_path, FUZZ_PORT);
	if (g_host_listener < 0 || bind(g_host_listener, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(g_host_listener, 64) < 0)
		abort();
	snprintf(g_host_path, sizeof(g_host_path), "%s", sa.sun_path);
	atexit(cleanup);
	return 0;
}

struct harness {
	struct bus bus;
	struct vsock *v;
	struct virtio_mmio *t;
	bool event_idx;
	bool steer;
	uint16_t avail[VSOCK_NUM_QUEUES];
	int socks[MAX_SOCKS];
	unsigned int nsocks;
};

static void wr(struct harness *h, uint64_t reg, uint32_t v)
{
	virtio_mmio_access(h->t, reg, (uint8_t *)&v, sizeof(v), true);
}

static uint16_t get16(uint64_t gpa)
{
	uint16_t v;
	memcpy(&v, g_mem.base + gpa, sizeof(v));
	return v;
}

static void put16(uint64_t gpa, uint16_t v)
{
	memcpy(g_mem.base + gpa, &v, sizeof(v));
}

static void put_desc(unsigned int q, uint16_t i, uint64_t addr, uint32_t len, uint16_t flags,
                     uint16_t next)
{
	struct {
		uint64_t addr;
		uint32_t len;
		uint16_t flags, next;
	} d = { addr, len, flags, next };
	memcpy(g_mem.base + DESC(q) + 16ULL * i, &d, sizeof(d));
}

static const uint16_t qsizes[VSOCK_NUM_QUEUES] = { QSIZE_RX, QSIZE_TX, QSIZE_EV };

static void driver_up(struct harness *h)
{
	memset(g_mem.base, 0, 0x40000); /* rings */
	memset(h->avail, 0, sizeof(h->avail));
	uint64_t feat = VIRTIO_BIT(VIRTIO_F_VERSION_1);
	if (h->event_idx)
		feat |= VIRTIO_BIT(VIRTIO_RING_F_EVENT_IDX);
	wr(h, VIRTIO_MMIO_STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(h, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 0);
	wr(h, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)feat);
	wr(h, VIRTIO_MMIO_DRIVER_FEATURES_SEL, 1);
	wr(h, VIRTIO_MMIO_DRIVER_FEATURES, (uint32_t)(feat >> 32));
	uint32_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_FEATURES_OK;
	wr(h, VIRTIO_MMIO_STATUS, st);
	for (uint32_t q = 0; q < VSOCK_NUM_QUEUES; q++) {
		wr(h, VIRTIO_MMIO_QUEUE_SEL, q);
		wr(h, VIRTIO_MMIO_QUEUE_NUM, qsizes[q]);
		wr(h, VIRTIO_MMIO_QUEUE_DESC_LOW, (uint32_t)DESC(q));
		wr(h, VIRTIO_MMIO_QUEUE_DRIVER_LOW, (uint32_t)AVAIL(q));
		wr(h, VIRTIO_MMIO_QUEUE_DEVICE_LOW, (uint32_t)USED(q));
		wr(h, VIRTIO_MMIO_QUEUE_READY, 1);
	}
	wr(h, VIRTIO_MMIO_STATUS, st | VIRTIO_STATUS_DRIVER_OK);
}

/* Chains the driver has offered and the device not yet returned. */
static uint16_t outstanding(struct harness *h, unsigned int q)
{
	return (uint16_t)(h->avail[q] - get16(USED(q) + 2));
}

static void offer(struct harness *h, unsigned int q, uint16_t head)
{
	put16(AVAIL(q) + 4 + 2 * (h->avail[q] % qsizes[q]), head);
	h->avail[q]++;
	put16(AVAIL(q) + 2, h->avail[q]);
	/* A driver with event-idx keeps used_event current. */
	put16(AVAIL(q) + 4 + 2 * qsizes[q], (uint16_t)(h->avail[q] - 1));
}

/* Folds ports onto the few values that reach live state. */
static void steer(struct virtio_vsock_hdr *p)
{
	p->src_cid = GUEST_CID;
	p->dst_cid = VSOCK_HOST_CID;
	p->type = VIRTIO_VSOCK_TYPE_STREAM;
	p->src_port = 1000 + p->src_port % 4;
	switch (p->dst_port % 4) {
	case 0:
		p->dst_port = FUZZ_PORT;
		break;
	case 1:
		p->dst_port = FUZZ_PORT + 1; /* nobody listens */
		break;
	default:
		p->dst_port = VSOCK_EPHEMERAL_PORT_MIN + (p->dst_port >> 2) % 4;
		break;
	}
	p->op %= 9;
}

static void step_tx(struct harness *h, uint8_t split, const uint8_t *d, size_t len)
{
	if (outstanding(h, VSOCK_QUEUE_TX) >= MAX_CHAINS)
		return;
	if (len > TXBUF_SIZE)
		len = TXBUF_SIZE;
	uint16_t slot = h->avail[VSOCK_QUEUE_TX] % MAX_CHAINS;
	uint8_t *buf = g_mem.base + TXBUF(slot);
	memcpy(buf, d, len);
	if (h->steer && len >= HDR_LEN) {
		struct virtio_vsock_hdr p;
		memcpy(&p, buf, sizeof(p));
		steer(&p);
		/* Usually honest about the payload length. */
		if (!(split & 0x10))
			p.len = (uint32_t)(len - HDR_LEN);
		memcpy(buf, &p, sizeof(p));
	}
	/* Up to three descriptors, cut at fuzzer-chosen points. */
	uint16_t base = (uint16_t)(slot * 3);
	size_t cut1 = split & 3 ? (len * (split & 3)) / 4 : len;
	size_t cut2 = (split >> 2) & 1 ? cut1 + (len - cut1) / 2 : len;
	if (cut1 == len) {
		put_desc(VSOCK_QUEUE_TX, base, TXBUF(slot), (uint32_t)len, 0, 0);
	} else if (cut2 == len) {
		put_desc(VSOCK_QUEUE_TX, base, TXBUF(slot), (uint32_t)cut1, VIRTQ_DESC_F_NEXT,
		         base + 1);
		put_desc(VSOCK_QUEUE_TX, base + 1, TXBUF(slot) + cut1, (uint32_t)(len - cut1), 0,
		         0);
	} else {
		put_desc(VSOCK_QUEUE_TX, base, TXBUF(slot), (uint32_t)cut1, VIRTQ_DESC_F_NEXT,
		         base + 1);
		put_desc(VSOCK_QUEUE_TX, base + 1, TXBUF(slot) + cut1, (uint32_t)(cut2 - cut1),
		         VIRTQ_DESC_F_NEXT, base + 2);
		/* The last piece may be writable: the device must ignore it. */
		put_desc(VSOCK_QUEUE_TX, base + 2, TXBUF(slot) + cut2, (uint32_t)(len - cut2),
		         (split & 0x20) ? VIRTQ_DESC_F_WRITE : 0, 0);
	}
	offer(h, VSOCK_QUEUE_TX, base);
	wr(h, VIRTIO_MMIO_QUEUE_NOTIFY, VSOCK_QUEUE_TX);
}

static void step_rx(struct harness *h, const uint8_t *d, size_t len)
{
	for (size_t i = 0; i + 1 < len; i += 2) {
		unsigned int count = d[i] % 8 + 1;
		for (unsigned int k = 0; k < count; k++) {
			if (outstanding(h, VSOCK_QUEUE_RX) >= MAX_CHAINS)
				break;
			uint16_t slot = h->avail[VSOCK_QUEUE_RX] % MAX_CHAINS;
			uint32_t size = (uint32_t)(d[i + 1] * 32) % RXBUF_SIZE + 1;
			uint16_t base = (uint16_t)(slot * 2);
			if (d[i + 1] & 1 && size > 20) {
				/* Header split over two descriptors. */
				put_desc(VSOCK_QUEUE_RX, base, RXBUF(slot), 20,
				         VIRTQ_DESC_F_WRITE | VIRTQ_DESC_F_NEXT, base + 1);
				put_desc(VSOCK_QUEUE_RX, base + 1, RXBUF(slot) + 20, size - 20,
				         VIRTQ_DESC_F_WRITE, 0);
			} else {
				put_desc(VSOCK_QUEUE_RX, base, RXBUF(slot), size,
				         VIRTQ_DESC_F_WRITE, 0);
			}
			offer(h, VSOCK_QUEUE_RX, base);
		}
	}
	wr(h, VIRTIO_MMIO_QUEUE_NOTIFY, VSOCK_QUEUE_RX);
}

static void add_sock(struct harness *h, int fd)
{
	if (h->nsocks == MAX_SOCKS) {
		close(fd);
		return;
	}
	h->socks[h->nsocks++] = fd;
}

static void step_connect(struct harness *h, const uint8_t *d, size_t len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", g_path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return;
	}
	if (len)
		(void)!send(fd, d, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	add_sock(h, fd);
}

static void step_write(struct harness *h, const uint8_t *d, size_t len)
{
	if (!h->nsocks || !len)
		return;
	int fd = h->socks[d[0] % h->nsocks];
	if (fd >= 0)
		(void)!send(fd, d + 1, len - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void step_close(struct harness *h, const uint8_t *d, size_t len)
{
	if (!h->nsocks || !len)
		return;
	int *fd = &h->socks[(d[0] >> 1) % h->nsocks];
	if (*fd < 0)
		return;
	if (d[0] & 1) {
		(void)shutdown(*fd, SHUT_WR);
	} else {
		close(*fd);
		*fd = -1;
	}
}

static void step_loop(struct harness *h)
{
	for (int i = 0; i < 8; i++)
		if (evloop_run_once(&g_loop, 0) <= 0)
			break;
	int fd;
	while ((fd = accept4(g_host_listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
		add_sock(h, fd);
	/* Host sockets read whatever reached them, so the device's writes
	 * keep flowing. */
	char sink[4096];
	for (unsigned int i = 0; i < h->nsocks; i++)
		if (h->socks[i] >= 0)
			(void)!recv(h->socks[i], sink, sizeof(sink), MSG_DONTWAIT);
}

static void step_event(struct harness *h)
{
	if (outstanding(h, VSOCK_QUEUE_EVENT) < QSIZE_EV) {
		uint16_t slot = h->avail[VSOCK_QUEUE_EVENT] % QSIZE_EV;
		put_desc(VSOCK_QUEUE_EVENT, slot, EVBUF(slot), 4, VIRTQ_DESC_F_WRITE, 0);
		offer(h, VSOCK_QUEUE_EVENT, slot);
	}
	vsock_transport_reset(h->v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	struct harness h = { .event_idx = data[0] & 1, .steer = data[0] & 2 };
	struct virtio_mmio_cfg cfg = {
		.base = BASE, .gsi = 5, .vm_fd = -1, .mem = &g_mem, .bus = &h.bus, .loop = &g_loop
	};
	if (vsock_create(&cfg, GUEST_CID, g_path, &h.v) < 0)
		abort();
	vsock_set_timeouts(h.v, 0, 0); /* expire at the first timer tick */
	h.t = vsock_transport(h.v);
	driver_up(&h);

	size_t pos = 1;
	while (pos + 2 <= size) {
		uint8_t kind = data[pos];
		size_t len = data[pos + 1];
		pos += 2;
		if (kind % 8 == 0 && len == 255 && pos + 2 <= size) {
			/* Long packets: a 16-bit length follows. */
			len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
			pos += 2;
		}
		if (len > size - pos)
			len = size - pos;
		const uint8_t *d = data + pos;
		pos += len;
		switch (kind % 8) {
		case 0:
			step_tx(&h, kind >> 3, d, len);
			break;
		case 1:
			step_rx(&h, d, len);
			break;
		case 2:
			step_connect(&h, d, len);
			break;
		case 3:
			step_write(&h, d, len);
			break;
		case 4:
			step_close(&h, d, len);
			break;
		case 5:
			step_loop(&h);
			break;
		case 6:
			step_event(&h);
			break;
		default:
			wr(&h, VIRTIO_MMIO_STATUS, 0);
			driver_up(&h);
			break;
		}
	}
	step_loop(&h);
	vsock_destroy(h.v);
	for (unsigned int i = 0; i < h.nsocks; i++)
		if (h.socks[i] >= 0)
			close(h.socks[i]);
	int fd;
	while ((fd = accept4(g_host_listener, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
	/* The lowest free fd must not creep up: that would be a leak. */
	static int first_free = -1;
	int probe = dup(2);
	if (probe < 0)
		abort();
	close(probe);
	if (first_free < 0)
		first_free = probe;
	else if (probe > first_free + 16)
		abort();
	return 0;
}
