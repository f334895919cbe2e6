/* virtio-vsock: the transport callbacks and the device's public API.  The
 * packet protocol and connections are vsock_guest.c's, the host's sockets
 * vsock_host.c's. */
#include "virtio/vsock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "virtio/iov.h"
#include "virtio/vsock_guest.h"
#include "virtio/vsock_host.h"

_Static_assert(sizeof(struct virtio_vsock_hdr) == 44, "vsock header is 44 bytes");
_Static_assert(sizeof(struct virtio_vsock_config) == 8, "vsock config is 8 bytes");
_Static_assert(VSOCK_QUEUE_SIZE <= VIRTQ_MAX_SIZE, "queue fits the shared virtqueue");
_Static_assert(VSOCK_MAX_CONNS < VSOCK_EPHEMERAL_PORT_MIN, "ephemeral ports never run out");

/* ---- transport callbacks ------------------------------------------------- */

static void vsock_queue_notify(void *dev, uint16_t queue)
{
	struct vsock *v = dev;
	if (queue == VSOCK_QUEUE_TX)
		vsock_process_tx(v);
	if (queue == VSOCK_QUEUE_EVENT && v->reset_unseen) {
		v->reset_unseen = false; /* the driver refilled: the reset is done */
		vsock_host_release_clients(v);
	}
	vsock_run(v);
	vsock_reap(v);
}

static void vsock_config_read(void *dev, uint32_t offset, uint8_t *data, uint32_t len)
{
	const struct vsock *v = dev;
	memcpy(data, (const uint8_t *)&v->config + offset, len);
}

/* Host clients may have connected before the driver was up. */
static int vsock_activate(void *dev)
{
	struct vsock *v = dev;
	vsock_run(v);
	vsock_reap(v);
	return 0;
}

/* The driver starts over: every connection it knew of is gone. */
static void vsock_reset(void *dev)
{
	struct vsock *v = dev;
	vsock_drop_all_conns(v);
	v->event_pending = false;
	v->reset_unseen = false;
	vsock_reap(v);
}

static const struct virtio_dev_ops vsock_ops = {
	.name = "virtio-vsock",
	.device_id = VIRTIO_ID_VSOCK,
	.num_queues = VSOCK_NUM_QUEUES,
	.queue_max = VSOCK_QUEUE_SIZE,
	.features = 0, /* stream only; VERSION_1 comes from the transport */
	.config_size = sizeof(struct virtio_vsock_config),
	.config_read = vsock_config_read,
	.queue_notify = vsock_queue_notify,
	.activate = vsock_activate,
	.reset = vsock_reset,
};

/* ---- public API ------------------------------------------------------------ */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Everything but the transport; safe on a half-built device. */
static void teardown(struct vsock *v)
{
	if (v->epfd_watched)
		(void)evloop_del(v->loop, v->epfd);
	v->epfd_watched = false;
	vsock_drop_all_conns(v);
	vsock_host_drop_clients(v);
	vsock_reap(v);
	close_fd(&v->listen_fd);
	close_fd(&v->timer_fd);
	close_fd(&v->epfd);
	if (v->uds_path)
		vsock_unix_unlink(v->uds_path, &v->uds_id);
	free(v->uds_path);
	v->uds_path = NULL;
}

const char *vsock_uds_path(const struct vsock *v)
{
	return v->uds_path;
}

int vsock_set_uds_path(struct vsock *v, const char *path)
{
	if (strlen(path) + VSOCK_UNIX_SUFFIX_MAX >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	free(v->uds_path);
	v->uds_path = p;
	return 0;
}

int vsock_create(const struct virtio_mmio_cfg *cfg, uint64_t guest_cid, const char *uds_path,
                 struct vsock **out)
{
	*out = NULL;
	if (!cfg || !cfg->loop || !uds_path || !uds_path[0] || guest_cid < 3 ||
	    guest_cid >= 0xffffffffULL)
		return -EINVAL;
	struct vsock *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->proto = &vsock_guest_proto;
	v->config.guest_cid = guest_cid;
	v->loop = cfg->loop;
	v->epfd = v->listen_fd = v->timer_fd = -1;
	v->listen_w.kind = VSOCK_WATCH_LISTENER;
	v->timer_w.kind = VSOCK_WATCH_TIMER;
	v->line_timeout_ms = VSOCK_CONNECT_LINE_TIMEOUT_MS;
	v->response_timeout_ms = VSOCK_RESPONSE_TIMEOUT_MS;
	vsock_table_init(&v->conns);
	vsock_link_init(&v->rx_work);
	vsock_link_init(&v->connecting);
	vsock_link_init(&v->clients);
	vsock_link_init(&v->dead_clients);

	int err = -ENOMEM;
	v->uds_path = strdup(uds_path);
	if (!v->uds_path)
		goto fail;
	err = vsock_unix_listen(uds_path, &v->listen_fd, &v->uds_id);
	if (err)
		goto fail;
	v->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (v->timer_fd < 0) {
		err = -errno;
		goto fail;
	}
	err = vsock_host_init(v);
	if (err)
		goto fail;
	err = evloop_add(v->loop, v->epfd, EPOLLIN, vsock_host_ready, v);
	if (err)
		goto fail;
	v->epfd_watched = true;
	/* Last: a bus registration cannot be undone. */
	err = virtio_mmio_init(&v->t, cfg, &vsock_ops, v);
	if (err)
		goto fail;
	*out = v;
	return 0;
fail:
	teardown(v);
	free(v);
	return err;
}

void vsock_destroy(struct vsock *v)
{
	if (!v)
		return;
	teardown(v);
	virtio_mmio_destroy(&v->t);
	free(v);
}

struct virtio_mmio *vsock_transport(struct vsock *v)
{
	return &v->t;
}

void vsock_transport_reset(struct vsock *v)
{
	pthread_mutex_lock(&v->t.lock);
	vsock_drop_all_conns(v);
	v->event_pending = true;
	v->reset_deadline_ms = (uint64_t)mono_ms() + VSOCK_RESET_WAIT_MS;
	vsock_run(v);
	vsock_reap(v);
	pthread_mutex_unlock(&v->t.lock);
}

int vsock_cmdline(const struct vsock *v, char *buf, size_t len)
{
	return virtio_mmio_cmdline(&v->t, buf, len);
}

void vsock_set_timeouts(struct vsock *v, unsigned int line_ms, unsigned int response_ms)
{
	pthread_mutex_lock(&v->t.lock);
	v->line_timeout_ms = line_ms;
	v->response_timeout_ms = response_ms;
	pthread_mutex_unlock(&v->t.lock);
}

unsigned int vsock_conn_count(struct vsock *v)
{
	pthread_mutex_lock(&v->t.lock);
	unsigned int n = v->conns.count;
	pthread_mutex_unlock(&v->t.lock);
	return n;
}

unsigned int vsock_pending_count(struct vsock *v)
{
	pthread_mutex_lock(&v->t.lock);
	unsigned int n = v->nclients;
	pthread_mutex_unlock(&v->t.lock);
	return n;
}

static struct virtio_mmio *vsock_vdev_transport(void *dev)
{
	return vsock_transport(dev);
}

static void vsock_vdev_destroy(void *dev)
{
	vsock_destroy(dev);
}

/* Connections the guest had are gone: tell it (it resets them and its
 * listeners stay). */
static void vsock_vdev_restored(void *dev)
{
	vsock_transport_reset(dev);
}

const struct vdev_ops vsock_vdev_ops = {
	.transport = vsock_vdev_transport,
	.destroy = vsock_vdev_destroy,
	.restored = vsock_vdev_restored,
};
