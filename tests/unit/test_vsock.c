/* Unit tests: virtio-vsock driven the way a guest driver would (registers
 * through the bus, rings in guest RAM, no KVM) against real Unix sockets in
 * a temp dir, with the I/O loop turned by hand (evloop_run_once).  Also the
 * pure pieces: CONNECT parsing, the connection table, the byte ring. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "arch/x86_64/layout.h"
#include "backend/vsock_unix.h"
#include "base/bus.h"
#include "base/evloop.h"
#include "base/guest_mem.h"
#include "unit.h"
#include "virtio/vsock.h"
#include "virtio/vsock_conn.h"
#include "virtio_driver.h"

#define RAM_SIZE    (8 * 1024 * 1024)
#define BASE        0xd0000000ULL
#define QSIZE       64
#define Q_BASE(q)   (0x10000ULL + (q)*0x4000ULL)
#define DESC(q)     Q_BASE(q)
#define AVAIL(q)    (Q_BASE(q) + 0x800)
#define USED(q)     (Q_BASE(q) + 0x1000)
#define RXBUF(i)    (0x100000ULL + (i)*0x1000ULL)
#define RXBUF_SIZE  4096
#define EVBUF(i)    (0x180000ULL + (i)*0x10ULL)
#define TXHDR       0x200000ULL
#define TXDATA      0x210000ULL
#define HDR         ((uint32_t)sizeof(struct virtio_vsock_hdr))
#define GUEST_CID   3
#define GUEST_ALLOC (256 * 1024)

struct drv {
	struct guest_mem mem;
	struct bus bus;
	struct evloop loop;
	struct vsock *vs;
	char dir[64];
	char path[80];
	struct vdrv v;
};

/* ---- driver plumbing --------------------------------------------------------- */

static void drv_init_noup(struct drv *d)
{
	memset(d, 0, sizeof(*d));
	ck_assert_int_eq(gmem_create(&d->mem, RAM_SIZE, X86_MMIO_HOLE), 0);
	ck_assert_int_eq(evloop_init(&d->loop), 0);
	snprintf(d->dir, sizeof(d->dir), "/tmp/cove-vsock-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d->dir));
	snprintf(d->path, sizeof(d->path), "%s/v.sock", d->dir);
	struct virtio_mmio_cfg cfg = { .base = BASE,
		                       .gsi = 5,
		                       .vm_fd = -1,
		                       .mem = &d->mem,
		                       .bus = &d->bus,
		                       .loop = &d->loop };
	ck_assert_int_eq(vsock_create(&cfg, GUEST_CID, d->path, &d->vs), 0);
	vdrv_init(&d->v, &d->mem, &d->bus, BASE);
	for (unsigned int q = 0; q < VSOCK_NUM_QUEUES; q++)
		vdrv_ring(&d->v, q, DESC(q), AVAIL(q), USED(q), QSIZE);
}

static void drv_init(struct drv *d)
{
	drv_init_noup(d);
	vdrv_up(&d->v, VIRTIO_BIT(VIRTIO_F_VERSION_1), 0);
}

static void drv_fini(struct drv *d)
{
	vsock_destroy(d->vs);
	evloop_destroy(&d->loop);
	gmem_destroy(&d->mem);
	/* The device unlinked its listener; the test's own sockets remain. */
	struct stat st;
	ck_assert_int_ne(lstat(d->path, &st), 0);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", d->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Turns the I/O loop until nothing is left to do. */
static void pump(struct drv *d)
{
	for (int i = 0; i < 1000; i++)
		if (evloop_run_once(&d->loop, 0) <= 0)
			return;
	ck_abort_msg("the loop never went idle");
}

/* Waits up to ms for the loop to have work, then pumps. */
static void pump_wait(struct drv *d, int ms)
{
	(void)evloop_run_once(&d->loop, ms);
	pump(d);
}

/* ---- rx: buffers for the device ------------------------------------------------ */

static unsigned int rx_outstanding(struct drv *d)
{
	return (uint16_t)(d->v.q[VSOCK_QUEUE_RX].avail_idx - d->v.q[VSOCK_QUEUE_RX].used_seen);
}

/* Posts n rx buffers of `size` bytes (one descriptor each) and notifies. */
static void rx_post_sized(struct drv *d, unsigned int n, uint32_t size)
{
	for (unsigned int i = 0; i < n; i++) {
		ck_assert_uint_lt(rx_outstanding(d), QSIZE);
		uint16_t slot = d->v.q[VSOCK_QUEUE_RX].avail_idx % QSIZE;
		vdrv_put_desc(&d->v, VSOCK_QUEUE_RX, slot, RXBUF(slot), size, VIRTQ_DESC_F_WRITE,
		              0);
		vdrv_offer(&d->v, VSOCK_QUEUE_RX, slot);
	}
	vdrv_wr(&d->v, VIRTIO_MMIO_QUEUE_NOTIFY, VSOCK_QUEUE_RX);
}

static void rx_post(struct drv *d, unsigned int n)
{
	rx_post_sized(d, n, RXBUF_SIZE);
}

/* The next packet the device put on rx: header, payload into buf (if any).
 * False when none. */
static bool rx_get(struct drv *d, struct virtio_vsock_hdr *h, void *buf, size_t cap)
{
	struct virtq_used_elem e;
	if (!vdrv_take_used(&d->v, VSOCK_QUEUE_RX, &e))
		return false;
	ck_assert_uint_ge(e.len, HDR);
	ck_assert_int_eq(gmem_read(&d->mem, RXBUF(e.id), h, HDR), 0);
	ck_assert_uint_eq(h->len, e.len - HDR);
	ck_assert_uint_eq(h->src_cid, VSOCK_HOST_CID);
	ck_assert_uint_eq(h->dst_cid, GUEST_CID);
	ck_assert_uint_eq(h->type, VIRTIO_VSOCK_TYPE_STREAM);
	if (h->len) {
		ck_assert_uint_le(h->len, cap);
		ck_assert_int_eq(gmem_read(&d->mem, RXBUF(e.id) + HDR, buf, h->len), 0);
	}
	return true;
}

static struct virtio_vsock_hdr rx_expect(struct drv *d, uint16_t op)
{
	struct virtio_vsock_hdr h;
	static uint8_t scratch[RXBUF_SIZE];
	ck_assert_msg(rx_get(d, &h, scratch, sizeof(scratch)), "no packet for op %u", op);
	ck_assert_uint_eq(h.op, op);
	return h;
}

static void rx_expect_none(struct drv *d)
{
	struct virtio_vsock_hdr h;
	static uint8_t scratch[RXBUF_SIZE];
	bool got = rx_get(d, &h, scratch, sizeof(scratch));
	ck_assert_msg(!got, "unexpected packet op %u", got ? h.op : 0);
}

/* ---- tx: packets from the guest --------------------------------------------------- */

static struct virtio_vsock_hdr ghdr(uint16_t op, uint32_t src_port, uint32_t dst_port)
{
	return (struct virtio_vsock_hdr){
		.src_cid = GUEST_CID,
		.dst_cid = VSOCK_HOST_CID,
		.src_port = src_port,
		.dst_port = dst_port,
		.type = VIRTIO_VSOCK_TYPE_STREAM,
		.op = op,
		.buf_alloc = GUEST_ALLOC,
	};
}

/* Sends a header (hdr_len bytes of it) and payload as a two-descriptor
 * chain; checks the device completed it. */
static void tx_raw(struct drv *d, const struct virtio_vsock_hdr *h, uint32_t hdr_len,
                   const void *payload, uint32_t len)
{
	ck_assert_int_eq(gmem_write(&d->mem, TXHDR, h, sizeof(*h)), 0);
	if (len) {
		ck_assert_int_eq(gmem_write(&d->mem, TXDATA, payload, len), 0);
		vdrv_put_desc(&d->v, VSOCK_QUEUE_TX, 0, TXHDR, hdr_len, VIRTQ_DESC_F_NEXT, 1);
		vdrv_put_desc(&d->v, VSOCK_QUEUE_TX, 1, TXDATA, len, 0, 0);
	} else {
		vdrv_put_desc(&d->v, VSOCK_QUEUE_TX, 0, TXHDR, hdr_len, 0, 0);
	}
	vdrv_offer(&d->v, VSOCK_QUEUE_TX, 0);
	vdrv_wr(&d->v, VIRTIO_MMIO_QUEUE_NOTIFY, VSOCK_QUEUE_TX);
	struct virtq_used_elem e;
	ck_assert(vdrv_take_used(&d->v, VSOCK_QUEUE_TX, &e));
	ck_assert_uint_eq(e.id, 0);
}

static void tx(struct drv *d, struct virtio_vsock_hdr h, const void *payload, uint32_t len)
{
	h.len = len;
	tx_raw(d, &h, HDR, payload, len);
}

/* ---- host side ----------------------------------------------------------------------- */

static int uds_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	struct timeval tv = { .tv_sec = 2 };
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

static int uds_listen_port(struct drv *d, uint32_t port)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s_%u", d->path, port);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 128), 0);
	return fd;
}

static int accept_timeout(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	struct timeval tv = { .tv_sec = 2 };
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

static void send_all(int fd, const void *buf, size_t len)
{
	ck_assert_int_eq(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

static void recv_exact(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = recv(fd, (uint8_t *)buf + got, len - got, 0);
		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
}

/* The peer closed: EOF (or a reset), never data. */
static void expect_closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, 0);
	ck_assert_msg(n == 0 || (n < 0 && errno == ECONNRESET), "expected EOF, got %zd", n);
}

/* Nothing to read right now. */
static void expect_quiet(int fd)
{
	char c;
	ck_assert_int_eq(recv(fd, &c, 1, MSG_DONTWAIT), -1);
	ck_assert_int_eq(errno, EAGAIN);
}

static void send_line(int fd, const char *line)
{
	send_all(fd, line, strlen(line));
}

/* Host client connects to guest port `port`; the guest accepts.  Returns
 * the client fd and the host port the device picked. */
static int host_connect(struct drv *d, uint32_t port, uint32_t *host_port)
{
	int fd = uds_connect(d->path);
	char line[32];
	snprintf(line, sizeof(line), "CONNECT %u\n", port);
	send_line(fd, line);
	pump(d);
	if (rx_outstanding(d) == 0)
		rx_post(d, 1);
	struct virtio_vsock_hdr h = rx_expect(d, VIRTIO_VSOCK_OP_REQUEST);
	ck_assert_uint_eq(h.dst_port, port);
	ck_assert_uint_ge(h.src_port, VSOCK_EPHEMERAL_PORT_MIN);
	ck_assert_uint_eq(h.buf_alloc, VSOCK_CONN_BUF_ALLOC);
	tx(d, ghdr(VIRTIO_VSOCK_OP_RESPONSE, port, h.src_port), NULL, 0);
	char ok[32];
	int n = snprintf(ok, sizeof(ok), "OK %u\n", h.src_port);
	char got[32] = { 0 };
	recv_exact(fd, got, (size_t)n);
	ck_assert_str_eq(got, ok);
	*host_port = h.src_port;
	return fd;
}

static void pattern(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)((seed + i) * 131 + (i >> 8));
}

/* ---- tests: device basics ---------------------------------------------------------- */

START_TEST(device_identity_and_config)
{
	struct drv d;
	drv_init_noup(&d);
	ck_assert_uint_eq(vdrv_rd(&d.v, VIRTIO_MMIO_DEVICE_ID), VIRTIO_ID_VSOCK);
	vdrv_wr(&d.v, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 0);
	ck_assert_uint_eq(vdrv_rd(&d.v, VIRTIO_MMIO_DEVICE_FEATURES) & 0xffffff, 0);
	vdrv_wr(&d.v, VIRTIO_MMIO_DEVICE_FEATURES_SEL, 1);
	ck_assert(vdrv_rd(&d.v, VIRTIO_MMIO_DEVICE_FEATURES) & 1);
	for (uint32_t q = 0; q < 4; q++) {
		vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_SEL, q);
		ck_assert_uint_eq(vdrv_rd(&d.v, VIRTIO_MMIO_QUEUE_NUM_MAX),
		                  q < 3 ? VSOCK_QUEUE_SIZE : 0);
	}
	uint64_t cid = 0;
	ck_assert(bus_access(&d.bus, BASE + VIRTIO_MMIO_CONFIG, (uint8_t *)&cid, 8, false));
	ck_assert_uint_eq(cid, GUEST_CID);
	uint32_t hi = 0xdead;
	ck_assert(bus_access(&d.bus, BASE + VIRTIO_MMIO_CONFIG + 4, (uint8_t *)&hi, 4, false));
	ck_assert_uint_eq(hi, 0);
	/* Config space is read-only. */
	uint64_t junk = 99;
	ck_assert(bus_access(&d.bus, BASE + VIRTIO_MMIO_CONFIG, (uint8_t *)&junk, 8, true));
	ck_assert(bus_access(&d.bus, BASE + VIRTIO_MMIO_CONFIG, (uint8_t *)&cid, 8, false));
	ck_assert_uint_eq(cid, GUEST_CID);
	char line[64];
	ck_assert_int_gt(vsock_cmdline(d.vs, line, sizeof(line)), 0);
	ck_assert_str_eq(line, "virtio_mmio.device=4K@0xd0000000:5");
	drv_fini(&d);
}
END_TEST

START_TEST(create_rejects_bad_arguments)
{
	struct guest_mem mem;
	struct bus bus = { 0 };
	struct evloop loop;
	ck_assert_int_eq(gmem_create(&mem, 1 << 20, X86_MMIO_HOLE), 0);
	ck_assert_int_eq(evloop_init(&loop), 0);
	char dir[] = "/tmp/cove-vsock-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[80];
	snprintf(path, sizeof(path), "%s/v.sock", dir);
	struct virtio_mmio_cfg cfg = {
		.base = BASE, .gsi = 5, .vm_fd = -1, .mem = &mem, .bus = &bus, .loop = &loop
	};
	struct vsock *v = (struct vsock *)1;
	ck_assert_int_eq(vsock_create(&cfg, 2, path, &v), -EINVAL);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(vsock_create(&cfg, 0xffffffffULL, path, &v), -EINVAL);
	ck_assert_int_eq(vsock_create(&cfg, 3, "", &v), -EINVAL);
	char longp[120];
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = 0;
	ck_assert_int_eq(vsock_create(&cfg, 3, longp, &v), -ENAMETOOLONG);
	struct virtio_mmio_cfg noloop = cfg;
	noloop.loop = NULL;
	ck_assert_int_eq(vsock_create(&noloop, 3, path, &v), -EINVAL);
	/* Nothing was registered on the bus by the failures. */
	ck_assert_uint_eq(bus.n, 0);

	/* A regular file at the path is not ours to replace. */
	int f = open(path, O_CREAT | O_WRONLY, 0600);
	ck_assert_int_ge(f, 0);
	close(f);
	ck_assert_int_eq(vsock_create(&cfg, 3, path, &v), -EEXIST);
	unlink(path);

	/* A stale socket (its owner died) is replaced... */
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);
	ck_assert_int_eq(vsock_create(&cfg, 3, path, &v), 0);
	/* ...but a live one is not. */
	struct bus bus2 = { 0 };
	struct virtio_mmio_cfg cfg2 = cfg;
	cfg2.bus = &bus2;
	struct vsock *v2;
	ck_assert_int_eq(vsock_create(&cfg2, 4, path, &v2), -EADDRINUSE);
	vsock_destroy(v);
	struct stat st;
	ck_assert_int_ne(lstat(path, &st), 0);
	vsock_destroy(NULL);
	evloop_destroy(&loop);
	gmem_destroy(&mem);
	rmdir(dir);
}
END_TEST

/* ---- tests: host-initiated ------------------------------------------------------------ */

START_TEST(host_connect_stream_both_ways)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 8);
	uint32_t hp;
	int fd = host_connect(&d, 5000, &hp);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 1);
	expect_quiet(fd);

	/* host -> guest */
	send_line(fd, "hello");
	pump(&d);
	struct virtio_vsock_hdr h;
	char buf[64] = { 0 };
	ck_assert(rx_get(&d, &h, buf, sizeof(buf)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_uint_eq(h.src_port, hp);
	ck_assert_uint_eq(h.dst_port, 5000);
	ck_assert_uint_eq(h.len, 5);
	ck_assert_mem_eq(buf, "hello", 5);

	/* guest -> host */
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, 5000, hp), "world!", 6);
	char got[7] = { 0 };
	recv_exact(fd, got, 6);
	ck_assert_str_eq(got, "world!");

	/* Host EOF: the guest hears SHUTDOWN(SEND), nothing more yet. */
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	pump(&d);
	h = rx_expect(&d, VIRTIO_VSOCK_OP_SHUTDOWN);
	ck_assert_uint_eq(h.flags, VIRTIO_VSOCK_SHUTDOWN_F_SEND);
	rx_expect_none(&d);
	/* The half-closed client still gets guest data. */
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, 5000, hp), "late", 4);
	recv_exact(fd, got, 4);
	ck_assert_mem_eq(got, "late", 4);
	/* The guest closes: both sides done, the device answers RST. */
	struct virtio_vsock_hdr sd = ghdr(VIRTIO_VSOCK_OP_SHUTDOWN, 5000, hp);
	sd.flags = VIRTIO_VSOCK_SHUTDOWN_F_SEND | VIRTIO_VSOCK_SHUTDOWN_F_RECEIVE;
	tx(&d, sd, NULL, 0);
	pump(&d);
	rx_expect(&d, VIRTIO_VSOCK_OP_RST);
	expect_closed(fd);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	close(fd);
	ck_assert_uint_ge(vsock_transport(d.vs)->irq_count, 1);
	drv_fini(&d);
}
END_TEST

START_TEST(host_connect_guest_refuses)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 4);
	int fd = uds_connect(d.path);
	send_line(fd, "CONNECT 77\n");
	pump(&d);
	struct virtio_vsock_hdr h = rx_expect(&d, VIRTIO_VSOCK_OP_REQUEST);
	ck_assert_uint_eq(h.dst_port, 77);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RST, 77, h.src_port), NULL, 0);
	pump(&d);
	expect_closed(fd); /* no OK line */
	rx_expect_none(&d);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	close(fd);
	drv_fini(&d);
}
END_TEST

START_TEST(host_connect_guest_never_answers)
{
	struct drv d;
	drv_init(&d);
	vsock_set_timeouts(d.vs, 1000, 50);
	rx_post(&d, 4);
	int fd = uds_connect(d.path);
	send_line(fd, "CONNECT 78\n");
	pump(&d);
	struct virtio_vsock_hdr h = rx_expect(&d, VIRTIO_VSOCK_OP_REQUEST);
	pump_wait(&d, 500);
	expect_closed(fd);
	/* The guest may still have a half-open socket: it is told. */
	struct virtio_vsock_hdr r = rx_expect(&d, VIRTIO_VSOCK_OP_RST);
	ck_assert_uint_eq(r.src_port, h.src_port);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	close(fd);
	drv_fini(&d);
}
END_TEST

START_TEST(host_data_sent_before_ok_is_kept)
{
	/* A client that pipelines data right behind its CONNECT line. */
	struct drv d;
	drv_init(&d);
	rx_post(&d, 4);
	int fd = uds_connect(d.path);
	send_line(fd, "CONNECT 9\nearly-bytes");
	pump(&d);
	struct virtio_vsock_hdr h = rx_expect(&d, VIRTIO_VSOCK_OP_REQUEST);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RESPONSE, 9, h.src_port), NULL, 0);
	pump(&d);
	char buf[64] = { 0 };
	ck_assert(rx_get(&d, &h, buf, sizeof(buf)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_uint_eq(h.len, 11);
	ck_assert_mem_eq(buf, "early-bytes", 11);
	close(fd);
	drv_fini(&d);
}
END_TEST

START_TEST(bad_connect_lines_close_only_that_client)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 8);
	uint32_t hp;
	int good = host_connect(&d, 1, &hp);
	const char *bad[] = {
		"HELLO 5\n",
		"CONNECT\n",
		"CONNECT abc\n",
		"CONNECT -1\n",
		"CONNECT 5 6\n",
		"connect 5\n",
		"CONNECT 4294967296\n",
		"CONNECT 99999999999999999999\n",
		"CONNECT 000000000000000000000000000000000000005\n", /* overlong */
		"CONNECT 12",                                        /* then EOF */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int fd = uds_connect(d.path);
		send_line(fd, bad[i]);
		if (bad[i][strlen(bad[i]) - 1] != '\n')
			ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
		pump(&d);
		expect_closed(fd);
		close(fd);
	}
	/* 40 bytes without a newline */
	int fd = uds_connect(d.path);
	send_line(fd, "CONNECT 1111111111111111111111111111111111");
	pump(&d);
	expect_closed(fd);
	close(fd);
	rx_expect_none(&d);
	ck_assert_uint_eq(vsock_pending_count(d.vs), 0);
	/* The good connection is untouched. */
	send_line(good, "still here");
	pump(&d);
	struct virtio_vsock_hdr h;
	char buf[32] = { 0 };
	ck_assert(rx_get(&d, &h, buf, sizeof(buf)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_mem_eq(buf, "still here", 10);
	/* A line split over several writes is fine. */
	fd = uds_connect(d.path);
	send_line(fd, "CONN");
	pump(&d);
	send_line(fd, "ECT 4");
	pump(&d);
	send_line(fd, "2\r\n");
	pump(&d);
	h = rx_expect(&d, VIRTIO_VSOCK_OP_REQUEST);
	ck_assert_uint_eq(h.dst_port, 42);
	close(fd);
	close(good);
	drv_fini(&d);
}
END_TEST

START_TEST(connect_line_timeout)
{
	struct drv d;
	drv_init(&d);
	vsock_set_timeouts(d.vs, 50, 1000);
	int idle = uds_connect(d.path);
	int partial = uds_connect(d.path);
	pump(&d);
	send_line(partial, "CONNECT 1");
	pump(&d);
	ck_assert_uint_eq(vsock_pending_count(d.vs), 2);
	pump_wait(&d, 500);
	expect_closed(idle);
	expect_closed(partial);
	ck_assert_uint_eq(vsock_pending_count(d.vs), 0);
	close(idle);
	close(partial);
	drv_fini(&d);
}
END_TEST

START_TEST(connect_before_driver_is_up)
{
	struct drv d;
	drv_init_noup(&d);
	int fd = uds_connect(d.path);
	send_line(fd, "CONNECT 5\n");
	pump(&d);
	vdrv_up(&d.v, VIRTIO_BIT(VIRTIO_F_VERSION_1), 0);
	rx_post(&d, 2);
	struct virtio_vsock_hdr h = rx_expect(&d, VIRTIO_VSOCK_OP_REQUEST);
	ck_assert_uint_eq(h.dst_port, 5);
	close(fd);
	drv_fini(&d);
}
END_TEST

/* ---- tests: guest-initiated ------------------------------------------------------------ */

START_TEST(guest_connect_with_listener)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 8);
	int lfd = uds_listen_port(&d, 6000);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_REQUEST, 1234, 6000), NULL, 0);
	pump(&d);
	struct virtio_vsock_hdr h = rx_expect(&d, VIRTIO_VSOCK_OP_RESPONSE);
	ck_assert_uint_eq(h.src_port, 6000);
	ck_assert_uint_eq(h.dst_port, 1234);
	ck_assert_uint_eq(h.buf_alloc, VSOCK_CONN_BUF_ALLOC);
	int s = accept_timeout(lfd);

	tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, 1234, 6000), "ping", 4);
	char got[8] = { 0 };
	recv_exact(s, got, 4);
	ck_assert_str_eq(got, "ping");
	send_all(s, "pong", 4);
	pump(&d);
	char buf[16] = { 0 };
	ck_assert(rx_get(&d, &h, buf, sizeof(buf)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_mem_eq(buf, "pong", 4);

	/* Guest shuts its sending side: the Unix peer sees EOF. */
	struct virtio_vsock_hdr sd = ghdr(VIRTIO_VSOCK_OP_SHUTDOWN, 1234, 6000);
	sd.flags = VIRTIO_VSOCK_SHUTDOWN_F_SEND;
	tx(&d, sd, NULL, 0);
	pump(&d);
	expect_closed(s);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 1);
	/* The Unix peer closes too: SHUTDOWN, then the closing RST. */
	close(s);
	pump(&d);
	rx_expect(&d, VIRTIO_VSOCK_OP_SHUTDOWN);
	rx_expect(&d, VIRTIO_VSOCK_OP_RST);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	close(lfd);
	drv_fini(&d);
}
END_TEST

START_TEST(guest_connect_without_listener)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 4);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_REQUEST, 1234, 6001), NULL, 0);
	pump(&d);
	struct virtio_vsock_hdr h = rx_expect(&d, VIRTIO_VSOCK_OP_RST);
	ck_assert_uint_eq(h.src_port, 6001);
	ck_assert_uint_eq(h.dst_port, 1234);
	/* A listener that died (stale socket file): refused, RST too. */
	int lfd = uds_listen_port(&d, 6002);
	close(lfd);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_REQUEST, 1235, 6002), NULL, 0);
	pump(&d);
	rx_expect(&d, VIRTIO_VSOCK_OP_RST);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	drv_fini(&d);
}
END_TEST

START_TEST(guest_rst_closes_unix_side)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 4);
	int lfd = uds_listen_port(&d, 7000);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_REQUEST, 50, 7000), NULL, 0);
	pump(&d);
	rx_expect(&d, VIRTIO_VSOCK_OP_RESPONSE);
	int s = accept_timeout(lfd);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RST, 50, 7000), NULL, 0);
	pump(&d);
	expect_closed(s);
	rx_expect_none(&d); /* an RST is never answered */
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	/* A second REQUEST on the same ports is a fresh connection. */
	tx(&d, ghdr(VIRTIO_VSOCK_OP_REQUEST, 50, 7000), NULL, 0);
	pump(&d);
	rx_expect(&d, VIRTIO_VSOCK_OP_RESPONSE);
	/* ...and a duplicate REQUEST while it lives resets it. */
	tx(&d, ghdr(VIRTIO_VSOCK_OP_REQUEST, 50, 7000), NULL, 0);
	pump(&d);
	rx_expect(&d, VIRTIO_VSOCK_OP_RST);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	close(s);
	close(lfd);
	drv_fini(&d);
}
END_TEST

/* ---- tests: flow control ------------------------------------------------------------------ */

START_TEST(credit_is_respected)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 32);
	int lfd = uds_listen_port(&d, 8000);
	struct virtio_vsock_hdr req = ghdr(VIRTIO_VSOCK_OP_REQUEST, 99, 8000);
	req.buf_alloc = 1000;
	tx(&d, req, NULL, 0);
	pump(&d);
	rx_expect(&d, VIRTIO_VSOCK_OP_RESPONSE);
	int s = accept_timeout(lfd);

	static uint8_t big[10000], got[10000];
	pattern(big, sizeof(big), 1);
	send_all(s, big, sizeof(big));
	pump(&d);
	uint32_t total = 0;
	struct virtio_vsock_hdr h;
	while (rx_get(&d, &h, got + total, sizeof(got) - total)) {
		ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
		total += h.len;
	}
	ck_assert_uint_eq(total, 1000);
	/* No busy loop while out of credit: the loop is idle. */
	ck_assert_int_eq(evloop_run_once(&d.loop, 0), 0);

	/* The guest consumed it all and says so. */
	struct virtio_vsock_hdr cu = ghdr(VIRTIO_VSOCK_OP_CREDIT_UPDATE, 99, 8000);
	cu.buf_alloc = 1000;
	cu.fwd_cnt = 1000;
	tx(&d, cu, NULL, 0);
	pump(&d);
	while (rx_get(&d, &h, got + total, sizeof(got) - total))
		total += h.len;
	ck_assert_uint_eq(total, 2000);
	/* A bigger buffer lets the rest through. */
	cu.buf_alloc = 100000;
	cu.fwd_cnt = 2000;
	tx(&d, cu, NULL, 0);
	pump(&d);
	while (total < sizeof(big)) {
		if (rx_outstanding(&d) < 8)
			rx_post(&d, 8);
		pump(&d);
		ck_assert(rx_get(&d, &h, got + total, sizeof(got) - total));
		total += h.len;
	}
	ck_assert_mem_eq(got, big, sizeof(big));
	/* A bogus fwd_cnt beyond what was sent means no credit, not a lot. */
	cu.fwd_cnt = 0x80000000u;
	cu.buf_alloc = 10;
	tx(&d, cu, NULL, 0);
	send_all(s, "x", 1);
	pump(&d);
	rx_expect_none(&d);
	close(s);
	close(lfd);
	drv_fini(&d);
}
END_TEST

START_TEST(credit_request_and_update)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 8);
	uint32_t hp;
	int fd = host_connect(&d, 10, &hp);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_CREDIT_REQUEST, 10, hp), NULL, 0);
	pump(&d);
	struct virtio_vsock_hdr h = rx_expect(&d, VIRTIO_VSOCK_OP_CREDIT_UPDATE);
	ck_assert_uint_eq(h.buf_alloc, VSOCK_CONN_BUF_ALLOC);
	ck_assert_uint_eq(h.fwd_cnt, 0);

	/* After the guest has sent more than half our buffer, forwarded,
	 * the device volunteers an update. */
	static uint8_t chunk[32 * 1024], sink[32 * 1024];
	pattern(chunk, sizeof(chunk), 7);
	uint32_t sent = 0;
	while (sent < VSOCK_CONN_BUF_ALLOC / 2) {
		tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, 10, hp), chunk, sizeof(chunk));
		recv_exact(fd, sink, sizeof(sink));
		ck_assert_mem_eq(sink, chunk, sizeof(chunk));
		sent += sizeof(chunk);
	}
	pump(&d);
	h = rx_expect(&d, VIRTIO_VSOCK_OP_CREDIT_UPDATE);
	ck_assert_uint_eq(h.fwd_cnt, sent);
	close(fd);
	drv_fini(&d);
}
END_TEST

START_TEST(slow_unix_reader_buffers_then_drains)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 8);
	uint32_t hp;
	int fd = host_connect(&d, 11, &hp);
	/* The guest sends its whole credit while the client reads nothing:
	 * the socket takes some, the device holds the rest. */
	static uint8_t data[VSOCK_CONN_BUF_ALLOC], got[VSOCK_CONN_BUF_ALLOC];
	pattern(data, sizeof(data), 3);
	for (uint32_t off = 0; off < sizeof(data); off += 32 * 1024)
		tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, 11, hp), data + off, 32 * 1024);
	pump(&d);
	/* Now the client reads; EPOLLOUT drains the rest in order. */
	size_t total = 0;
	while (total < sizeof(got)) {
		ssize_t n = recv(fd, got + total, sizeof(got) - total, MSG_DONTWAIT);
		if (n < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			pump_wait(&d, 100);
			continue;
		}
		ck_assert_int_gt(n, 0);
		total += (size_t)n;
	}
	ck_assert_mem_eq(got, data, sizeof(data));
	/* Whatever updates went out on the way, the guest can learn that
	 * everything was forwarded. */
	struct virtio_vsock_hdr h;
	static uint8_t scratch[RXBUF_SIZE];
	while (rx_get(&d, &h, scratch, sizeof(scratch)))
		ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_CREDIT_UPDATE);
	rx_post(&d, 2);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_CREDIT_REQUEST, 11, hp), NULL, 0);
	h = rx_expect(&d, VIRTIO_VSOCK_OP_CREDIT_UPDATE);
	ck_assert_uint_eq(h.fwd_cnt, sizeof(data));
	close(fd);
	drv_fini(&d);
}
END_TEST

START_TEST(guest_overrunning_credit_is_reset)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 8);
	uint32_t hp;
	int fd = host_connect(&d, 12, &hp);
	int small = 4096;
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	static uint8_t chunk[64 * 1024];
	int i = 0;
	for (; i < 32 && vsock_conn_count(d.vs); i++)
		tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, 12, hp), chunk, sizeof(chunk));
	/* 256 KiB in the device plus what the socket holds, then reset. */
	ck_assert_int_gt(i, 4);
	ck_assert_int_lt(i, 32);
	pump(&d);
	struct virtio_vsock_hdr h;
	static uint8_t scratch[RXBUF_SIZE];
	bool rst = false;
	while (rx_get(&d, &h, scratch, sizeof(scratch)))
		rst |= h.op == VIRTIO_VSOCK_OP_RST;
	ck_assert(rst);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	close(fd);
	drv_fini(&d);
}
END_TEST

START_TEST(rx_starvation_pauses_and_resumes)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 1);
	uint32_t hp;
	int fd = host_connect(&d, 13, &hp);
	ck_assert_uint_eq(rx_outstanding(&d), 0);
	send_line(fd, "queued until buffers come");
	pump(&d);
	/* No buffers: nothing sent, and the loop is idle (no busy loop). */
	rx_expect_none(&d);
	ck_assert_int_eq(evloop_run_once(&d.loop, 0), 0);
	rx_post(&d, 1);
	struct virtio_vsock_hdr h;
	char buf[64] = { 0 };
	ck_assert(rx_get(&d, &h, buf, sizeof(buf)));
	ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
	ck_assert_mem_eq(buf, "queued until buffers come", 25);
	/* Buffers too small for a header are handed back unused. */
	rx_post_sized(&d, 1, 8);
	send_line(fd, "x");
	pump(&d);
	struct virtq_used_elem e;
	ck_assert(vdrv_take_used(&d.v, VSOCK_QUEUE_RX, &e));
	ck_assert_uint_eq(e.len, 0);
	rx_post(&d, 1);
	ck_assert(rx_get(&d, &h, buf, sizeof(buf)));
	ck_assert_uint_eq(h.len, 1);
	close(fd);
	drv_fini(&d);
}
END_TEST

/* ---- tests: hostile guest ------------------------------------------------------------------ */

START_TEST(malformed_packets_get_rst_or_dropped)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 32);
	struct virtio_vsock_hdr h;

	/* Wrong type. */
	h = ghdr(VIRTIO_VSOCK_OP_REQUEST, 1, 2);
	h.type = 2;
	tx(&d, h, NULL, 0);
	/* Wrong destination CID: answered from that CID. */
	h = ghdr(VIRTIO_VSOCK_OP_REQUEST, 1, 3);
	h.dst_cid = 77;
	tx(&d, h, NULL, 0);
	/* len beyond the chain. */
	h = ghdr(VIRTIO_VSOCK_OP_RW, 1, 4);
	h.len = 0xffffffffu;
	tx_raw(&d, &h, HDR, "abc", 3);
	/* Unknown and INVALID ops, data for nobody. */
	tx(&d, ghdr(99, 1, 5), NULL, 0);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_INVALID, 1, 6), NULL, 0);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, 1, 7), "zz", 2);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_SHUTDOWN, 1, 8), NULL, 0);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RESPONSE, 1, 9), NULL, 0);
	pump(&d);
	uint32_t want_ports[] = { 2, 3, 4, 5, 6, 7, 8, 9 };
	for (size_t i = 0; i < 8; i++) {
		struct virtio_vsock_hdr r;
		struct virtq_used_elem e;
		ck_assert(vdrv_take_used(&d.v, VSOCK_QUEUE_RX, &e));
		ck_assert_int_eq(gmem_read(&d.mem, RXBUF(e.id), &r, HDR), 0);
		ck_assert_uint_eq(r.op, VIRTIO_VSOCK_OP_RST);
		ck_assert_uint_eq(r.src_port, want_ports[i]);
		ck_assert_uint_eq(r.dst_port, 1);
		ck_assert_uint_eq(r.src_cid, i == 1 ? 77 : VSOCK_HOST_CID);
	}

	/* Dropped silently: a truncated header, a spoofed source CID, an RST
	 * for nobody. */
	h = ghdr(VIRTIO_VSOCK_OP_REQUEST, 1, 10);
	tx_raw(&d, &h, 20, NULL, 0);
	h.src_cid = 9;
	tx(&d, h, NULL, 0);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RST, 1, 11), NULL, 0);
	/* A chain pointing outside RAM is completed and dropped. */
	vdrv_put_desc(&d.v, VSOCK_QUEUE_TX, 0, RAM_SIZE + 4096, HDR, 0, 0);
	vdrv_offer(&d.v, VSOCK_QUEUE_TX, 0);
	vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, VSOCK_QUEUE_TX);
	struct virtq_used_elem e;
	ck_assert(vdrv_take_used(&d.v, VSOCK_QUEUE_TX, &e));
	/* A looping chain too. */
	vdrv_put_desc(&d.v, VSOCK_QUEUE_TX, 0, TXHDR, HDR, VIRTQ_DESC_F_NEXT, 1);
	vdrv_put_desc(&d.v, VSOCK_QUEUE_TX, 1, TXHDR, HDR, VIRTQ_DESC_F_NEXT, 0);
	vdrv_offer(&d.v, VSOCK_QUEUE_TX, 0);
	vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, VSOCK_QUEUE_TX);
	ck_assert(vdrv_take_used(&d.v, VSOCK_QUEUE_TX, &e));
	pump(&d);
	rx_expect_none(&d);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	ck_assert(!(vdrv_rd(&d.v, VIRTIO_MMIO_STATUS) & VIRTIO_STATUS_DEVICE_NEEDS_RESET));
	drv_fini(&d);
}
END_TEST

START_TEST(malformed_packet_on_live_conn_resets_it)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 16);
	uint32_t hp;
	int fd = host_connect(&d, 20, &hp);
	struct virtio_vsock_hdr h = ghdr(VIRTIO_VSOCK_OP_RW, 20, hp);
	h.len = 4096; /* more than the chain holds */
	tx_raw(&d, &h, HDR, "tiny", 4);
	pump(&d);
	rx_expect(&d, VIRTIO_VSOCK_OP_RST);
	expect_closed(fd);
	close(fd);

	/* Data before the guest accepted: reset, client closed without OK. */
	fd = uds_connect(d.path);
	send_line(fd, "CONNECT 21\n");
	pump(&d);
	h = rx_expect(&d, VIRTIO_VSOCK_OP_REQUEST);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, 21, h.src_port), "no", 2);
	pump(&d);
	rx_expect(&d, VIRTIO_VSOCK_OP_RST);
	expect_closed(fd);
	close(fd);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	drv_fini(&d);
}
END_TEST

START_TEST(rst_backlog_stalls_tx_instead_of_dropping)
{
	struct drv d;
	drv_init(&d);
	/* 100 packets for nobody with no rx buffers: the device stops taking
	 * tx once it owes too many RSTs, and resumes when rx buffers come. */
	struct virtio_vsock_hdr h = ghdr(VIRTIO_VSOCK_OP_RW, 1, 1);
	ck_assert_int_eq(gmem_write(&d.mem, TXHDR, &h, sizeof(h)), 0);
	vdrv_put_desc(&d.v, VSOCK_QUEUE_TX, 0, TXHDR, HDR, 0, 0);
	unsigned int sent = 0, done = 0;
	for (; sent < 100; sent++) {
		if ((uint16_t)(d.v.q[VSOCK_QUEUE_TX].avail_idx - d.v.q[VSOCK_QUEUE_TX].used_seen) ==
		    QSIZE)
			break;
		vdrv_offer(&d.v, VSOCK_QUEUE_TX, 0);
		vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, VSOCK_QUEUE_TX);
		struct virtq_used_elem e;
		while (vdrv_take_used(&d.v, VSOCK_QUEUE_TX, &e))
			done++;
	}
	ck_assert_uint_lt(done, sent);
	unsigned int rsts = 0;
	while (rsts < sent) {
		rx_post(&d, QSIZE - rx_outstanding(&d));
		struct virtio_vsock_hdr r;
		static uint8_t scratch[RXBUF_SIZE];
		while (rx_get(&d, &r, scratch, sizeof(scratch))) {
			ck_assert_uint_eq(r.op, VIRTIO_VSOCK_OP_RST);
			rsts++;
		}
		struct virtq_used_elem e;
		while (vdrv_take_used(&d.v, VSOCK_QUEUE_TX, &e))
			done++;
	}
	ck_assert_uint_eq(rsts, sent);
	ck_assert_uint_eq(done, sent);
	drv_fini(&d);
}
END_TEST

/* ---- tests: scale, resets ------------------------------------------------------------------- */

#define NCONN 100

START_TEST(hundred_concurrent_connections)
{
	struct drv d;
	drv_init(&d);
	int fds[NCONN];
	uint32_t hp[NCONN];
	/* Half host-initiated, half guest-initiated. */
	for (int i = 0; i < NCONN / 2; i++) {
		rx_post(&d, 1);
		fds[i] = host_connect(&d, 100 + (uint32_t)i, &hp[i]);
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(hp[i], hp[j]);
	}
	int lfd = uds_listen_port(&d, 9000);
	for (int i = NCONN / 2; i < NCONN; i++) {
		rx_post(&d, 1);
		tx(&d, ghdr(VIRTIO_VSOCK_OP_REQUEST, 2000 + (uint32_t)i, 9000), NULL, 0);
		pump(&d);
		rx_expect(&d, VIRTIO_VSOCK_OP_RESPONSE);
		fds[i] = accept_timeout(lfd);
		hp[i] = 9000;
	}
	ck_assert_uint_eq(vsock_conn_count(d.vs), NCONN);
	/* Every host socket writes its own index; each arrives on its own
	 * connection. */
	for (int i = 0; i < NCONN; i++) {
		char msg[16];
		int n = snprintf(msg, sizeof(msg), "m%03d", i);
		send_all(fds[i], msg, (size_t)n);
	}
	bool seen[NCONN] = { false };
	int got = 0;
	while (got < NCONN) {
		rx_post(&d, QSIZE - rx_outstanding(&d));
		pump(&d);
		struct virtio_vsock_hdr h;
		char buf[32] = { 0 };
		while (rx_get(&d, &h, buf, sizeof(buf))) {
			ck_assert_uint_eq(h.op, VIRTIO_VSOCK_OP_RW);
			ck_assert_uint_eq(h.len, 4);
			int i = atoi(buf + 1);
			ck_assert_int_lt(i, NCONN);
			ck_assert(!seen[i]);
			seen[i] = true;
			uint32_t guest_port =
			    i < NCONN / 2 ? 100 + (uint32_t)i : 2000 + (uint32_t)i;
			ck_assert_uint_eq(h.dst_port, guest_port);
			ck_assert_uint_eq(h.src_port, hp[i]);
			got++;
		}
	}
	/* And back: the guest writes to each. */
	for (int i = 0; i < NCONN; i++) {
		uint32_t guest_port = i < NCONN / 2 ? 100 + (uint32_t)i : 2000 + (uint32_t)i;
		char msg[8];
		snprintf(msg, sizeof(msg), "r%03d", i);
		tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, guest_port, hp[i]), msg, 4);
	}
	for (int i = 0; i < NCONN; i++) {
		char want[8], buf[8] = { 0 };
		snprintf(want, sizeof(want), "r%03d", i);
		recv_exact(fds[i], buf, 4);
		ck_assert_str_eq(buf, want);
		close(fds[i]);
	}
	/* Every Unix side closed: 100 SHUTDOWNs reach the guest. */
	int shut = 0;
	for (int round = 0; round < 10 && shut < NCONN; round++) {
		rx_post(&d, QSIZE - rx_outstanding(&d));
		pump_wait(&d, 10);
		struct virtio_vsock_hdr h;
		char buf[32];
		while (rx_get(&d, &h, buf, sizeof(buf)))
			shut += h.op == VIRTIO_VSOCK_OP_SHUTDOWN;
	}
	ck_assert_int_eq(shut, NCONN);
	close(lfd);
	drv_fini(&d);
}
END_TEST

START_TEST(transport_reset_event)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 4);
	uint32_t hp;
	int fd = host_connect(&d, 30, &hp);
	/* No event buffer yet: the event waits for one. */
	vsock_transport_reset(d.vs);
	expect_closed(fd);
	close(fd);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	struct virtq_used_elem e;
	ck_assert(!vdrv_take_used(&d.v, VSOCK_QUEUE_EVENT, &e));
	vdrv_put_desc(&d.v, VSOCK_QUEUE_EVENT, 0, EVBUF(0), 4, VIRTQ_DESC_F_WRITE, 0);
	vdrv_put_desc(&d.v, VSOCK_QUEUE_EVENT, 1, EVBUF(1), 4, VIRTQ_DESC_F_WRITE, 0);
	uint32_t poison = 0xffffffff;
	ck_assert_int_eq(gmem_write(&d.mem, EVBUF(0), &poison, 4), 0);
	vdrv_offer(&d.v, VSOCK_QUEUE_EVENT, 0);
	vdrv_offer(&d.v, VSOCK_QUEUE_EVENT, 1);
	vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, VSOCK_QUEUE_EVENT);
	ck_assert(vdrv_take_used(&d.v, VSOCK_QUEUE_EVENT, &e));
	ck_assert_uint_eq(e.id, 0);
	ck_assert_uint_eq(e.len, 4);
	uint32_t id;
	ck_assert_int_eq(gmem_read(&d.mem, EVBUF(0), &id, 4), 0);
	ck_assert_uint_eq(id, VIRTIO_VSOCK_EVENT_TRANSPORT_RESET);
	ck_assert(!vdrv_take_used(&d.v, VSOCK_QUEUE_EVENT, &e));
	/* With a buffer ready, the event goes out at once. */
	vsock_transport_reset(d.vs);
	ck_assert(vdrv_take_used(&d.v, VSOCK_QUEUE_EVENT, &e));
	ck_assert_uint_eq(e.id, 1);
	/* A host client now waits until the driver hands the event buffer back
	 * (it has reset its old connections then): no REQUEST before that. */
	int early = uds_connect(d.path);
	send_line(early, "CONNECT 32\n");
	pump(&d);
	rx_expect_none(&d);
	vdrv_offer(&d.v, VSOCK_QUEUE_EVENT, 1);
	vdrv_wr(&d.v, VIRTIO_MMIO_QUEUE_NOTIFY, VSOCK_QUEUE_EVENT);
	pump(&d);
	struct virtio_vsock_hdr h = rx_expect(&d, VIRTIO_VSOCK_OP_REQUEST);
	ck_assert_uint_eq(h.dst_port, 32);
	close(early);
	/* New connections work afterwards. */
	fd = host_connect(&d, 31, &hp);
	close(fd);
	drv_fini(&d);
}
END_TEST

START_TEST(driver_reset_drops_connections)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 4);
	uint32_t hp;
	int fd = host_connect(&d, 40, &hp);
	int lfd = uds_listen_port(&d, 41);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_REQUEST, 7, 41), NULL, 0);
	pump(&d);
	int s = accept_timeout(lfd);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 2);
	vdrv_wr(&d.v, VIRTIO_MMIO_STATUS, 0);
	expect_closed(fd);
	expect_closed(s);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 0);
	/* Host data while the driver is down goes nowhere and costs nothing. */
	int c2 = uds_connect(d.path);
	send_line(c2, "CONNECT 5\n");
	pump(&d);
	ck_assert_uint_eq(vsock_conn_count(d.vs), 1);
	close(c2);
	close(fd);
	close(s);
	close(lfd);
	drv_fini(&d);
}
END_TEST

START_TEST(destroy_with_live_connections)
{
	struct drv d;
	drv_init(&d);
	rx_post(&d, 4);
	uint32_t hp;
	int fd = host_connect(&d, 50, &hp);
	int idle = uds_connect(d.path);
	pump(&d);
	tx(&d, ghdr(VIRTIO_VSOCK_OP_RW, 50, hp), "bye", 3);
	drv_fini(&d); /* also checks the listener path is gone */
	char buf[4] = { 0 };
	recv_exact(fd, buf, 3);
	expect_closed(fd);
	expect_closed(idle);
	close(fd);
	close(idle);
}
END_TEST

/* ---- tests: pure pieces ------------------------------------------------------------------------- */

START_TEST(parse_connect_lines)
{
	uint32_t p = 0;
	ck_assert_int_eq(vsock_unix_parse_connect("CONNECT 52\n", 11, &p), 0);
	ck_assert_uint_eq(p, 52);
	ck_assert_int_eq(vsock_unix_parse_connect("CONNECT 4294967295\n", 19, &p), 0);
	ck_assert_uint_eq(p, 4294967295u);
	ck_assert_int_eq(vsock_unix_parse_connect("CONNECT 0\r\n", 11, &p), 0);
	ck_assert_uint_eq(p, 0);
	ck_assert_int_eq(vsock_unix_parse_connect("CONNECT 4294967296\n", 19, &p), -EPROTO);
	ck_assert_int_eq(vsock_unix_parse_connect("CONNECT \n", 9, &p), -EPROTO);
	ck_assert_int_eq(vsock_unix_parse_connect("CONNECT \r\n", 10, &p), -EPROTO);
	ck_assert_int_eq(vsock_unix_parse_connect("CONNECT 5", 9, &p), -EPROTO);
	ck_assert_int_eq(vsock_unix_parse_connect("CONNECT +5\n", 11, &p), -EPROTO);
	ck_assert_int_eq(vsock_unix_parse_connect("CONNECT 5\0\n", 11, &p), -EPROTO);
	ck_assert_int_eq(vsock_unix_parse_connect("\n", 1, &p), -EPROTO);
	char ok[16];
	ck_assert_int_eq(vsock_unix_ok_line(1073741824u, ok, sizeof(ok)), 14);
	ck_assert_str_eq(ok, "OK 1073741824\n");
	ck_assert_int_eq(vsock_unix_ok_line(5, ok, 4), -ENOSPC);
}
END_TEST

START_TEST(conn_table_and_ports)
{
	static struct vsock_table t;
	vsock_table_init(&t);
	struct vsock_conn *a = vsock_conn_new(5, 6, 16);
	struct vsock_conn *b = vsock_conn_new(5, 7, 16);
	struct vsock_conn *dup = vsock_conn_new(5, 6, 16);
	ck_assert_int_eq(vsock_table_insert(&t, a), 0);
	ck_assert_int_eq(vsock_table_insert(&t, b), 0);
	ck_assert_int_eq(vsock_table_insert(&t, dup), -EEXIST);
	ck_assert_ptr_eq(vsock_table_find(&t, 5, 6), a);
	ck_assert_ptr_eq(vsock_table_find(&t, 5, 7), b);
	ck_assert_ptr_null(vsock_table_find(&t, 6, 5));
	vsock_table_remove(&t, a);
	ck_assert_ptr_null(vsock_table_find(&t, 5, 6));
	ck_assert_uint_eq(t.count, 1);

	/* Ephemeral ports skip live ones and wrap back to the minimum. */
	uint32_t p;
	struct vsock_conn *e = vsock_conn_new(100, 1, 16);
	ck_assert_int_eq(vsock_table_insert(&t, e), 0);
	t.next_port = 100;
	ck_assert_int_eq(vsock_table_alloc_port(&t, 100, &p), 0);
	ck_assert_uint_eq(p, 101);
	t.next_port = UINT32_MAX;
	ck_assert_int_eq(vsock_table_alloc_port(&t, 100, &p), 0);
	ck_assert_uint_eq(p, UINT32_MAX);
	ck_assert_int_eq(vsock_table_alloc_port(&t, 100, &p), 0);
	ck_assert_uint_eq(p, 101);
	vsock_table_remove(&t, b);
	vsock_table_remove(&t, e);
	vsock_conn_free(a);
	vsock_conn_free(b);
	vsock_conn_free(dup);
	vsock_conn_free(e);

	/* Credit arithmetic wraps like the spec's counters. */
	struct vsock_conn c = { .peer_buf_alloc = 100, .tx_cnt = 5, .peer_fwd_cnt = 0xfffffffbu };
	ck_assert_uint_eq(vsock_conn_peer_credit(&c), 90);
	c.peer_fwd_cnt = 6; /* claims more consumed than sent */
	ck_assert_uint_eq(vsock_conn_peer_credit(&c), 0);
}
END_TEST

START_TEST(byte_ring_wraps)
{
	struct vsock_ring r = { .cap = 8 };
	uint8_t src[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct iovec in[2] = { { src, 3 }, { src + 3, 3 } };
	ck_assert_int_eq(vsock_ring_put(&r, in, 2, 6), 0);
	vsock_ring_consume(&r, 4);
	struct iovec two[2] = { { src, 2 }, { src + 6, 2 } };
	ck_assert_int_eq(vsock_ring_put(&r, two, 2, 4), 0);
	ck_assert_int_eq(vsock_ring_put(&r, two, 2, 3), -ENOBUFS);
	struct iovec out[2];
	ck_assert_int_eq(vsock_ring_peek(&r, out), 2);
	uint8_t got[6];
	memcpy(got, out[0].iov_base, out[0].iov_len);
	memcpy(got + out[0].iov_len, out[1].iov_base, out[1].iov_len);
	ck_assert_uint_eq(out[0].iov_len + out[1].iov_len, 6);
	uint8_t want[6] = { 5, 6, 1, 2, 7, 8 };
	ck_assert_mem_eq(got, want, 6);
	vsock_ring_consume(&r, 6);
	ck_assert_int_eq(vsock_ring_peek(&r, out), 0);
	vsock_ring_free(&r);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("vsock");
	TCase *dev = tcase_create("device");
	tcase_set_timeout(dev, 30);
	tcase_add_test(dev, device_identity_and_config);
	tcase_add_test(dev, create_rejects_bad_arguments);
	tcase_add_test(dev, host_connect_stream_both_ways);
	tcase_add_test(dev, host_connect_guest_refuses);
	tcase_add_test(dev, host_connect_guest_never_answers);
	tcase_add_test(dev, host_data_sent_before_ok_is_kept);
	tcase_add_test(dev, bad_connect_lines_close_only_that_client);
	tcase_add_test(dev, connect_line_timeout);
	tcase_add_test(dev, connect_before_driver_is_up);
	tcase_add_test(dev, guest_connect_with_listener);
	tcase_add_test(dev, guest_connect_without_listener);
	tcase_add_test(dev, guest_rst_closes_unix_side);
	tcase_add_test(dev, credit_is_respected);
	tcase_add_test(dev, credit_request_and_update);
	tcase_add_test(dev, slow_unix_reader_buffers_then_drains);
	tcase_add_test(dev, guest_overrunning_credit_is_reset);
	tcase_add_test(dev, rx_starvation_pauses_and_resumes);
	tcase_add_test(dev, malformed_packets_get_rst_or_dropped);
	tcase_add_test(dev, malformed_packet_on_live_conn_resets_it);
	tcase_add_test(dev, rst_backlog_stalls_tx_instead_of_dropping);
	tcase_add_test(dev, hundred_concurrent_connections);
	tcase_add_test(dev, transport_reset_event);
	tcase_add_test(dev, driver_reset_drops_connections);
	tcase_add_test(dev, destroy_with_live_connections);
	suite_add_tcase(s, dev);
	TCase *pure = tcase_create("pure");
	tcase_add_test(pure, parse_connect_lines);
	tcase_add_test(pure, conn_table_and_ports);
	tcase_add_test(pure, byte_ring_wraps);
	suite_add_tcase(s, pure);
	return s;
}

UNIT_MAIN()
