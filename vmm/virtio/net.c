#include "virtio/net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/ratelimit.h"
#include "virtio/iov.h"
#include "virtio/net_hdr.h"

_Static_assert(sizeof(struct virtio_net_hdr_v1) == VNET_HDR_LEN, "virtio_net_hdr_v1 is 12 bytes");
_Static_assert(VNET_HDR_LEN == TAP_VNET_HDR_LEN, "the TAP's vnet header is the device's");
_Static_assert(sizeof(struct virtio_net_config) == 10, "net config layout");
_Static_assert(VNET_QUEUE_SIZE <= VIRTQ_MAX_SIZE, "queue fits the shared virtqueue");
_Static_assert(VNET_RX_IOV_MAX >= 2 * VIRTQ_MAX_SIZE, "room for a whole chain after compaction");

/* ---- transport callbacks and loop handlers ------------------------------ */

static void vnet_queue_notify(void *dev, uint16_t queue)
{
	struct vnet *n = dev;
	if (queue == VNET_RXQ)
		vnet_rx_pass(n); /* new buffers: a waiting frame may go, the TAP is polled */
	else if (queue == VNET_TXQ)
		vnet_tx_pass(n);
}

static void vnet_config_read(void *dev, uint32_t offset, uint8_t *data, uint32_t len)
{
	const struct vnet *n = dev;
	memcpy(data, (const uint8_t *)&n->config + offset, len);
}

/* DRIVER_OK, on a vCPU thread: the TUNSETOFFLOAD for the features just
 * accepted runs on the I/O loop, which the receive queue's eventfd wakes
 * (it then also starts polling the TAP). */
static int vnet_activate(void *dev)
{
	struct vnet *n = dev;
	n->offload_pending = true;
	int fd = n->t.notifiers[VNET_RXQ].fd;
	if (fd >= 0)
		(void)eventfd_write(fd, 1);
	else
		vnet_apply_offload(n); /* no VM, no loop: the caller's thread */
	return 0;
}

static void vnet_reset(void *dev)
{
	struct vnet *n = dev;
	vnet_set_rx_poll(n, false);
	vnet_rx_reset_fifo(n);
	n->frame_pending = false;
	n->rx_throttled = n->tx_throttled = false;
}

/* The TAP is readable (or failed). */
static void tap_ready(void *opaque, uint32_t events)
{
	struct vnet *n = opaque;
	pthread_mutex_lock(&n->t.lock);
	if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN)) {
		/* epoll reports these whatever the mask: off the loop for good
		 * (the interface was deleted under us), or it would spin. */
		fprintf(stderr, "cove-vmm: virtio-net: the TAP %s hung up; receive stops\n",
		        n->tap.name);
		n->tap_dead = true;
		n->rx_poll = false;
		if (n->tap_watched)
			(void)evloop_del(n->loop, n->tap.fd);
		n->tap_watched = false;
	} else {
		vnet_rx_pass(n);
	}
	pthread_mutex_unlock(&n->t.lock);
}

static void timer_fired(struct vnet *n, int fd, uint16_t queue)
{
	uint64_t expirations;
	/* #syscalls: read (I/O thread, the limiter's timerfd) */
	if (read(fd, &expirations, sizeof(expirations)) < 0)
		return; /* EAGAIN: a stale wake-up */
	pthread_mutex_lock(&n->t.lock);
	if (queue == VNET_RXQ)
		n->rx_throttled = false;
	else
		n->tx_throttled = false;
	if (vnet_live(n, queue))
		vnet_queue_notify(n, queue);
	pthread_mutex_unlock(&n->t.lock);
}

static void rx_timer_fired(void *opaque, uint32_t events)
{
	struct vnet *n = opaque;
	(void)events;
	timer_fired(n, n->rx_timer, VNET_RXQ);
}

static void tx_timer_fired(void *opaque, uint32_t events)
{
	struct vnet *n = opaque;
	(void)events;
	timer_fired(n, n->tx_timer, VNET_TXQ);
}

/* Checksum and TSO both ways; the TAP takes GSO frames from us whatever
 * it was told, and TUNSETOFFLOAD says what it may give the guest. */
static const struct virtio_dev_ops vnet_ops = {
	.name = "virtio-net",
	.device_id = VIRTIO_ID_NET,
	.num_queues = 2,
	.queue_max = VNET_QUEUE_SIZE,
	.features = VIRTIO_BIT(VIRTIO_NET_F_CSUM) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) |
	            VIRTIO_BIT(VIRTIO_NET_F_MAC) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) |
	            VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_ECN) |
	            VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) |
	            VIRTIO_BIT(VIRTIO_NET_F_HOST_ECN) | VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) |
	            VIRTIO_BIT(VIRTIO_NET_F_STATUS),
	.config_size = sizeof(struct virtio_net_config),
	.config_read = vnet_config_read,
	/* The MAC is read-only without VIRTIO_NET_F_CTRL_MAC_ADDR: no config_write. */
	.queue_notify = vnet_queue_notify,
	.activate = vnet_activate,
	.reset = vnet_reset,
};

int vnet_create(const struct virtio_mmio_cfg *cfg, struct tap *tap, const uint8_t mac[6],
                struct vnet **out)
{
	*out = NULL;
	if (!cfg || !tap || tap->fd < 0 || !mac) {
		if (tap)
			tap_close(tap);
		return -EINVAL;
	}
	struct vnet *n = calloc(1, sizeof(*n));
	uint8_t *frame = malloc(VNET_FRAME_MAX);
	if (!n || !frame) {
		free(n);
		free(frame);
		tap_close(tap);
		return -ENOMEM;
	}
	n->tap = *tap;
	tap->fd = -1; /* the device's now */
	tap->owned = false;
	n->frame = frame;
	n->rx_timer = n->tx_timer = -1;
	memcpy(n->st.mac, mac, 6);
	memcpy(n->config.mac, mac, 6);
	n->config.status = VIRTIO_NET_S_LINK_UP;
	n->config.max_virtqueue_pairs = 1;
	int err = virtio_mmio_init(&n->t, cfg, &vnet_ops, n);
	if (err) {
		tap_close(&n->tap);
		free(n->frame);
		free(n);
		return err;
	}
	n->loop = cfg->loop;
	if (n->loop) {
		/* Watched from the start, polled once the driver is ready. */
		err = evloop_add(n->loop, n->tap.fd, 0, tap_ready, n);
		if (err) {
			vnet_destroy(n);
			return err;
		}
		n->tap_watched = true;
	}
	*out = n;
	return 0;
}

static int make_timer(struct vnet *n, int *fd, evloop_fn fn)
{
	if (*fd >= 0)
		return 0;
	/* #syscalls: timerfd_create (main thread, at setup) */
	*fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (*fd < 0)
		return -errno;
	int r = evloop_add(n->loop, *fd, EPOLLIN, fn, n);
	if (r < 0) {
		close(*fd);
		*fd = -1;
	}
	return r;
}

int vnet_set_limits(struct vnet *n, const struct vnet_limits *l)
{
	bool rx = l->rx_bps || l->rx_pps, tx = l->tx_bps || l->tx_pps;
	if (!rx && !tx)
		return 0;
	if (!n->loop)
		return -EINVAL;
	int r;
	uint64_t now = vnet_now_ns();
	if (rx) {
		if ((r = make_timer(n, &n->rx_timer, rx_timer_fired)) < 0)
			return r;
		rl_init(&n->rx_rl, l->rx_bps, 0, l->rx_pps, 0, now);
		rl_add_one_time_burst(&n->rx_rl, l->rx_bps_burst, l->rx_pps_burst);
	}
	if (tx) {
		if ((r = make_timer(n, &n->tx_timer, tx_timer_fired)) < 0)
			return r;
		rl_init(&n->tx_rl, l->tx_bps, 0, l->tx_pps, 0, now);
		rl_add_one_time_burst(&n->tx_rl, l->tx_bps_burst, l->tx_pps_burst);
	}
	return 0;
}

void vnet_destroy(struct vnet *n)
{
	if (!n)
		return;
	int *timers[] = { &n->rx_timer, &n->tx_timer };
	for (unsigned int i = 0; i < 2; i++) {
		if (*timers[i] < 0)
			continue;
		(void)evloop_del(n->loop, *timers[i]);
		close(*timers[i]);
		*timers[i] = -1;
	}
	if (n->tap_watched)
		(void)evloop_del(n->loop, n->tap.fd);
	n->tap_watched = false;
	virtio_mmio_destroy(&n->t);
	tap_close(&n->tap);
	free(n->frame);
	free(n);
}

struct virtio_mmio *vnet_transport(struct vnet *n)
{
	return &n->t;
}

void vnet_save(struct vnet *n, struct vnet_state *out)
{
	pthread_mutex_lock(&n->t.lock);
	*out = n->st;
	pthread_mutex_unlock(&n->t.lock);
}

void vnet_restore(struct vnet *n, const struct vnet_state *in)
{
	pthread_mutex_lock(&n->t.lock);
	n->st = *in;
	memcpy(n->config.mac, in->mac, 6);
	pthread_mutex_unlock(&n->t.lock);
}

void vnet_get_stats(struct vnet *n, struct vnet_stats *out)
{
	const uint64_t *src = (const uint64_t *)(const void *)&n->stats;
	uint64_t *dst = (uint64_t *)(void *)out;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

bool vnet_rx_polling(struct vnet *n)
{
	pthread_mutex_lock(&n->t.lock);
	bool on = n->rx_poll;
	pthread_mutex_unlock(&n->t.lock);
	return on;
}

void vnet_poll_rx(struct vnet *n)
{
	pthread_mutex_lock(&n->t.lock);
	if (n->rx_poll)
		vnet_rx_pass(n);
	pthread_mutex_unlock(&n->t.lock);
}

int vnet_cmdline(const struct vnet *n, char *buf, size_t len)
{
	return virtio_mmio_cmdline(&n->t, buf, len);
}

static struct virtio_mmio *net_vdev_transport(void *dev)
{
	return vnet_transport(dev);
}

static void net_vdev_destroy(void *dev)
{
	vnet_destroy(dev);
}

static void net_vdev_save(void *dev, void *out)
{
	vnet_save(dev, out);
}

static void net_vdev_restore(void *dev, const void *in)
{
	vnet_restore(dev, in);
}

const struct vdev_ops vnet_vdev_ops = {
	.transport = net_vdev_transport,
	.destroy = net_vdev_destroy,
	.state_size = sizeof(struct vnet_state),
	.save = net_vdev_save,
	.restore = net_vdev_restore,
};
