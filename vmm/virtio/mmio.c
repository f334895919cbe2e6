#include "virtio/mmio.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

_Static_assert(VIRTIO_MMIO_SIZE == 0x1000, "virtio_mmio_cmdline() writes the size as 4K");

static uint64_t device_features(const struct virtio_mmio *t)
{
	return t->ops->features | VIRTIO_TRANSPORT_FEATURES;
}

/* One edge per interrupt the driver has not yet taken.  A used-buffer
 * interrupt whose status bit is still set is already on its way, or being
 * handled: the driver reads the status, acknowledges what it read, then
 * looks at every queue, and this device published its buffers before it
 * looked at the bit, so they are seen.  A second edge would only cost the
 * guest a spurious interrupt (a status read, an acknowledgement of 0 and an
 * EOI: three exits).  Only while the driver runs (DRIVER_OK): before that no
 * handler may be there to clear a bit, and config changes always ring. */
static void raise_irq(struct virtio_mmio *t, uint32_t bit)
{
	uint32_t old = __atomic_fetch_or(&t->st.interrupt_status, bit, __ATOMIC_SEQ_CST);
	if ((old & bit) && bit == VIRTIO_MMIO_INT_VRING &&
	    (__atomic_load_n(&t->st.status, __ATOMIC_SEQ_CST) & VIRTIO_STATUS_DRIVER_OK)) {
		__atomic_fetch_add(&t->irq_coalesced, 1, __ATOMIC_RELAXED);
		return;
	}
	__atomic_fetch_add(&t->irq_count, 1, __ATOMIC_RELAXED);
	/* The counter saturates long before it could fail; EAGAIN is harmless
	 * because the pending edge is still there. */
	if (t->irq_fd >= 0)
		(void)eventfd_write(t->irq_fd, 1);
}

void virtio_mmio_signal_used(struct virtio_mmio *t)
{
	raise_irq(t, VIRTIO_MMIO_INT_VRING);
}

void virtio_mmio_config_changed(struct virtio_mmio *t)
{
	__atomic_fetch_add(&t->st.config_generation, 1, __ATOMIC_SEQ_CST);
	raise_irq(t, VIRTIO_MMIO_INT_CONFIG);
}

void virtio_mmio_needs_reset(struct virtio_mmio *t)
{
	__atomic_fetch_or(&t->st.status, VIRTIO_STATUS_DEVICE_NEEDS_RESET, __ATOMIC_SEQ_CST);
	virtio_mmio_config_changed(t);
}

bool virtio_mmio_has_feature(const struct virtio_mmio *t, unsigned int bit)
{
	return bit < 64 && (t->st.acked_features & VIRTIO_BIT(bit));
}

/* Lock held.  Runs the device's notify handler if the queue may be used. */
static void notify_locked(struct virtio_mmio *t, uint32_t queue)
{
	if (queue >= t->ops->num_queues || !t->st.queues[queue].ready)
		return;
	if (!(t->st.status & VIRTIO_STATUS_DRIVER_OK) ||
	    (t->st.status & VIRTIO_STATUS_DEVICE_NEEDS_RESET))
		return;
	if (t->ops->queue_notify)
		t->ops->queue_notify(t->dev, (uint16_t)queue);
}

/* I/O loop callback for one queue's ioeventfd. */
static void notifier_ready(void *opaque, uint32_t events)
{
	struct virtio_mmio_notifier *n = opaque;
	eventfd_t count;
	(void)events;
	if (eventfd_read(n->fd, &count) < 0)
		return; /* EAGAIN: someone else drained it */
	pthread_mutex_lock(&n->t->lock);
	notify_locked(n->t, n->queue);
	pthread_mutex_unlock(&n->t->lock);
}

/* Lock held.  Device reset (status 0): the driver starts over. */
static void reset_locked(struct virtio_mmio *t)
{
	struct virtio_mmio_state *st = &t->st;
	st->status = 0;
	st->device_features_sel = 0;
	st->driver_features_sel = 0;
	st->driver_features = 0;
	st->acked_features = 0;
	st->queue_sel = 0;
	__atomic_store_n(&st->interrupt_status, 0, __ATOMIC_SEQ_CST);
	for (unsigned int i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++)
		virtq_reset(&st->queues[i]);
	if (t->ops->reset)
		t->ops->reset(t->dev);
}

static struct virtq *selected_queue(struct virtio_mmio *t)
{
	if (t->st.queue_sel >= t->ops->num_queues)
		return NULL;
	return &t->st.queues[t->st.queue_sel];
}

static void set_low(uint64_t *v, uint32_t lo)
{
	*v = (*v & 0xffffffff00000000ULL) | lo;
}

static void set_high(uint64_t *v, uint32_t hi)
{
	*v = (*v & 0xffffffffULL) | ((uint64_t)hi << 32);
}

static uint32_t reg_read(struct virtio_mmio *t, uint64_t reg)
{
	struct virtio_mmio_state *st = &t->st;
	struct virtq *q = selected_queue(t);

	switch (reg) {
	case VIRTIO_MMIO_MAGIC_VALUE:
		return VIRTIO_MMIO_MAGIC;
	case VIRTIO_MMIO_VERSION:
		return VIRTIO_MMIO_VERSION_MODERN;
	case VIRTIO_MMIO_DEVICE_ID:
		return t->ops->device_id;
	case VIRTIO_MMIO_VENDOR_ID:
		return VIRTIO_COVE_VENDOR_ID;
	case VIRTIO_MMIO_DEVICE_FEATURES:
		if (st->device_features_sel > 1)
			return 0;
		return (uint32_t)(device_features(t) >> (32 * st->device_features_sel));
	case VIRTIO_MMIO_QUEUE_NUM_MAX:
		return q ? t->ops->queue_max : 0;
	case VIRTIO_MMIO_QUEUE_READY:
		return q ? q->ready : 0;
	case VIRTIO_MMIO_INTERRUPT_STATUS:
		return __atomic_load_n(&st->interrupt_status, __ATOMIC_SEQ_CST);
	case VIRTIO_MMIO_STATUS:
		return __atomic_load_n(&st->status, __ATOMIC_SEQ_CST);
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
		return q ? (uint32_t)q->desc_gpa : 0;
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
		return q ? (uint32_t)(q->desc_gpa >> 32) : 0;
	case VIRTIO_MMIO_QUEUE_DRIVER_LOW:
		return q ? (uint32_t)q->avail_gpa : 0;
	case VIRTIO_MMIO_QUEUE_DRIVER_HIGH:
		return q ? (uint32_t)(q->avail_gpa >> 32) : 0;
	case VIRTIO_MMIO_QUEUE_DEVICE_LOW:
		return q ? (uint32_t)q->used_gpa : 0;
	case VIRTIO_MMIO_QUEUE_DEVICE_HIGH:
		return q ? (uint32_t)(q->used_gpa >> 32) : 0;
	case VIRTIO_MMIO_CONFIG_GENERATION:
		return __atomic_load_n(&st->config_generation, __ATOMIC_SEQ_CST);
	default:
		return 0; /* write-only and reserved registers read as zero */
	}
}

/* Lock held.  The driver accepts features: only a subset of ours, and
 * always VERSION_1 (this is a modern-only transport). */
static bool features_ok(const struct virtio_mmio *t)
{
	uint64_t f = t->st.driver_features;
	return !(f & ~device_features(t)) && (f & VIRTIO_BIT(VIRTIO_F_VERSION_1));
}

static void status_write(struct virtio_mmio *t, uint32_t v)
{
	struct virtio_mmio_state *st = &t->st;
	if (v == 0) {
		reset_locked(t);
		return;
	}
	uint32_t old = st->status;
	v |= old & VIRTIO_STATUS_DEVICE_NEEDS_RESET; /* only a reset clears it */
	if ((v & VIRTIO_STATUS_FEATURES_OK) && !(old & VIRTIO_STATUS_FEATURES_OK)) {
		if (features_ok(t))
			st->acked_features = st->driver_features;
		else
			v &= ~(uint32_t)VIRTIO_STATUS_FEATURES_OK; /* the driver reads it back */
	}
	bool activate = (v & VIRTIO_STATUS_DRIVER_OK) && !(old & VIRTIO_STATUS_DRIVER_OK);
	if (activate && !(v & VIRTIO_STATUS_FEATURES_OK)) {
		v &= ~(uint32_t)VIRTIO_STATUS_DRIVER_OK;
		activate = false;
	}
	__atomic_store_n(&st->status, v, __ATOMIC_SEQ_CST);
	if (!activate)
		return;
	bool event_idx = virtio_mmio_has_feature(t, VIRTIO_RING_F_EVENT_IDX);
	for (unsigned int i = 0; i < t->ops->num_queues; i++)
		st->queues[i].event_idx = event_idx;
	if (t->ops->activate && t->ops->activate(t->dev) < 0)
		virtio_mmio_needs_reset(t);
}

static void queue_ready_write(struct virtio_mmio *t, struct virtq *q, uint32_t v)
{
	if (!v) {
		q->ready = false;
		return;
	}
	if (q->ready || virtq_check(q, t->cfg.mem, t->ops->queue_max) < 0)
		return; /* a bad setup leaves the queue not ready, as the driver sees */
	q->event_idx = virtio_mmio_has_feature(t, VIRTIO_RING_F_EVENT_IDX);
	q->broken = false;
	q->last_avail_idx = 0;
	q->used_idx = 0;
	q->signalled_used = 0;
	q->ready = true;
}

static void reg_write(struct virtio_mmio *t, uint64_t reg, uint32_t v)
{
	struct virtio_mmio_state *st = &t->st;
	struct virtq *q = selected_queue(t);
	bool features_locked = st->status & VIRTIO_STATUS_FEATURES_OK;
	/* Queue layout registers are frozen while the queue is live. */
	struct virtq *qw = q && !q->ready ? q : NULL;

	switch (reg) {
	case VIRTIO_MMIO_DEVICE_FEATURES_SEL:
		st->device_features_sel = v;
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES:
		if (!features_locked && st->driver_features_sel == 0)
			set_low(&st->driver_features, v);
		else if (!features_locked && st->driver_features_sel == 1)
			set_high(&st->driver_features, v);
		break;
	case VIRTIO_MMIO_DRIVER_FEATURES_SEL:
		st->driver_features_sel = v;
		break;
	case VIRTIO_MMIO_QUEUE_SEL:
		st->queue_sel = v;
		break;
	case VIRTIO_MMIO_QUEUE_NUM:
		if (qw)
			qw->size = v > UINT16_MAX ? 0 : (uint16_t)v;
		break;
	case VIRTIO_MMIO_QUEUE_READY:
		if (q)
			queue_ready_write(t, q, v);
		break;
	case VIRTIO_MMIO_QUEUE_NOTIFY:
		if (t->cfg.vm_fd >= 0 && v < t->ops->num_queues) {
			/* Missed the ioeventfd (e.g. another width): hand it to
			 * the I/O loop so notify always runs there. */
			(void)eventfd_write(t->notifiers[v].fd, 1);
		} else {
			notify_locked(t, v);
		}
		break;
	case VIRTIO_MMIO_INTERRUPT_ACK:
		__atomic_fetch_and(&st->interrupt_status, ~v, __ATOMIC_SEQ_CST);
		break;
	case VIRTIO_MMIO_STATUS:
		status_write(t, v);
		break;
	case VIRTIO_MMIO_QUEUE_DESC_LOW:
		if (qw)
			set_low(&qw->desc_gpa, v);
		break;
	case VIRTIO_MMIO_QUEUE_DESC_HIGH:
		if (qw)
			set_high(&qw->desc_gpa, v);
		break;
	case VIRTIO_MMIO_QUEUE_DRIVER_LOW:
		if (qw)
			set_low(&qw->avail_gpa, v);
		break;
	case VIRTIO_MMIO_QUEUE_DRIVER_HIGH:
		if (qw)
			set_high(&qw->avail_gpa, v);
		break;
	case VIRTIO_MMIO_QUEUE_DEVICE_LOW:
		if (qw)
			set_low(&qw->used_gpa, v);
		break;
	case VIRTIO_MMIO_QUEUE_DEVICE_HIGH:
		if (qw)
			set_high(&qw->used_gpa, v);
		break;
	default:
		break; /* read-only and reserved registers ignore writes */
	}
}

static void config_access(struct virtio_mmio *t, uint64_t off, uint8_t *data, uint32_t len,
                          bool is_write)
{
	if (len != 1 && len != 2 && len != 4 && len != 8)
		return;
	if (off >= t->ops->config_size || len > t->ops->config_size - off)
		return;
	if (is_write) {
		if (t->ops->config_write)
			t->ops->config_write(t->dev, (uint32_t)off, data, len);
	} else if (t->ops->config_read) {
		t->ops->config_read(t->dev, (uint32_t)off, data, len);
	}
}

void virtio_mmio_access(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct virtio_mmio *t = opaque;
	if (!is_write)
		memset(data, 0, len);
	if (offset >= VIRTIO_MMIO_SIZE)
		return;

	pthread_mutex_lock(&t->lock);
	if (offset >= VIRTIO_MMIO_CONFIG) {
		config_access(t, offset - VIRTIO_MMIO_CONFIG, data, len, is_write);
	} else if (len == 4 && offset % 4 == 0) {
		/* Registers are 32 bits; other widths are ignored (4.2.2.2). */
		if (is_write) {
			uint32_t v;
			memcpy(&v, data, sizeof(v));
			reg_write(t, offset, v);
		} else {
			uint32_t v = reg_read(t, offset);
			memcpy(data, &v, sizeof(v));
		}
	}
	pthread_mutex_unlock(&t->lock);
}

/* ---- KVM wiring ---------------------------------------------------------- */

static int kvm_ioeventfd(const struct virtio_mmio *t, const struct virtio_mmio_notifier *n,
                         bool assign)
{
	struct kvm_ioeventfd io = {
		.datamatch = n->queue,
		.addr = t->cfg.base + VIRTIO_MMIO_QUEUE_NOTIFY,
		.len = 4,
		.fd = n->fd,
		.flags = KVM_IOEVENTFD_FLAG_DATAMATCH | (assign ? 0 : KVM_IOEVENTFD_FLAG_DEASSIGN),
	};
	return ioctl(t->cfg.vm_fd, KVM_IOEVENTFD, &io) < 0 ? -errno : 0;
}

static int kvm_irqfd(const struct virtio_mmio *t, bool assign)
{
	struct kvm_irqfd irq = {
		.fd = (uint32_t)t->irq_fd,
		.gsi = t->cfg.gsi,
		.flags = assign ? 0 : KVM_IRQFD_FLAG_DEASSIGN,
	};
	return ioctl(t->cfg.vm_fd, KVM_IRQFD, &irq) < 0 ? -errno : 0;
}

static int setup_notifier(struct virtio_mmio *t, struct virtio_mmio_notifier *n)
{
	n->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (n->fd < 0)
		return -errno;
	int err = kvm_ioeventfd(t, n, true);
	if (err)
		return err;
	n->assigned = true;
	if (t->cfg.loop) {
		err = evloop_add(t->cfg.loop, n->fd, EPOLLIN, notifier_ready, n);
		if (err)
			return err;
		n->watched = true;
	}
	return 0;
}

static int setup_kvm(struct virtio_mmio *t)
{
	t->irq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->irq_fd < 0)
		return -errno;
	int err = kvm_irqfd(t, true);
	if (err) {
		close(t->irq_fd);
		t->irq_fd = -1;
		return err;
	}
	for (unsigned int i = 0; i < t->ops->num_queues; i++) {
		err = setup_notifier(t, &t->notifiers[i]);
		if (err)
			return err;
	}
	return 0;
}

void virtio_mmio_destroy(struct virtio_mmio *t)
{
	for (unsigned int i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		struct virtio_mmio_notifier *n = &t->notifiers[i];
		if (n->watched)
			(void)evloop_del(t->cfg.loop, n->fd);
		if (n->assigned)
			(void)kvm_ioeventfd(t, n, false);
		if (n->fd >= 0)
			close(n->fd);
		n->fd = -1;
		n->watched = n->assigned = false;
	}
	if (t->irq_fd >= 0) {
		(void)kvm_irqfd(t, false);
		close(t->irq_fd);
		t->irq_fd = -1;
	}
	if (t->lock_init)
		pthread_mutex_destroy(&t->lock);
	t->lock_init = false;
}

int virtio_mmio_init(struct virtio_mmio *t, const struct virtio_mmio_cfg *cfg,
                     const struct virtio_dev_ops *ops, void *dev)
{
	memset(t, 0, sizeof(*t));
	t->irq_fd = -1;
	for (unsigned int i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		t->notifiers[i] = (struct virtio_mmio_notifier){ .t = t, .queue = (uint16_t)i };
		t->notifiers[i].fd = -1;
	}
	if (!cfg || !ops || !cfg->mem || !cfg->bus || ops->num_queues == 0 ||
	    ops->num_queues > VIRTIO_MMIO_MAX_QUEUES || ops->queue_max == 0 ||
	    ops->queue_max > VIRTQ_MAX_SIZE || ops->config_size > VIRTIO_MMIO_CONFIG_SIZE)
		return -EINVAL;
	t->cfg = *cfg;
	t->ops = ops;
	t->dev = dev;
	int err = pthread_mutex_init(&t->lock, NULL);
	if (err)
		return -err;
	t->lock_init = true;
	if (cfg->vm_fd >= 0) {
		err = setup_kvm(t);
		if (err)
			goto fail;
	}
	err = bus_register(cfg->bus, cfg->base, VIRTIO_MMIO_SIZE, virtio_mmio_access, t,
	                   ops->name ? ops->name : "virtio-mmio");
	if (err)
		goto fail;
	t->registered = true;
	return 0;
fail:
	virtio_mmio_destroy(t);
	return err;
}

int virtio_mmio_cmdline(const struct virtio_mmio *t, char *buf, size_t len)
{
	int n = snprintf(buf, len, "virtio_mmio.device=4K@0x%llx:%u",
	                 (unsigned long long)t->cfg.base, t->cfg.gsi);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	return n;
}

void virtio_mmio_save(struct virtio_mmio *t, struct virtio_mmio_state *out)
{
	pthread_mutex_lock(&t->lock);
	*out = t->st;
	out->interrupt_status = __atomic_load_n(&t->st.interrupt_status, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&t->lock);
}

int virtio_mmio_restore(struct virtio_mmio *t, const struct virtio_mmio_state *in)
{
	for (unsigned int i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		const struct virtq *q = &in->queues[i];
		if (i >= t->ops->num_queues && (q->ready || q->size))
			return -EINVAL;
		if (q->size > t->ops->queue_max)
			return -EINVAL;
		if (q->ready && virtq_check(q, t->cfg.mem, t->ops->queue_max) < 0)
			return -EINVAL;
	}
	if (in->acked_features & ~device_features(t))
		return -EINVAL;
	pthread_mutex_lock(&t->lock);
	t->st = *in;
	int err = 0;
	if ((t->st.status & VIRTIO_STATUS_DRIVER_OK) && t->ops->activate)
		err = t->ops->activate(t->dev);
	pthread_mutex_unlock(&t->lock);
	return err < 0 ? err : 0;
}

void virtio_mmio_kick_all(struct virtio_mmio *t)
{
	pthread_mutex_lock(&t->lock);
	/* An interrupt the guest had not yet acknowledged may have had its
	 * edge still in the saved VMM's irqfd (KVM injects an IOAPIC irqfd
	 * from a kernel worker, after the write): the saved interrupt
	 * controller then holds nothing, and with the bit set raise_irq
	 * would never ring again.  One edge now; at worst the guest reads a
	 * status it already handled. */
	if ((t->st.status & VIRTIO_STATUS_DRIVER_OK) &&
	    __atomic_load_n(&t->st.interrupt_status, __ATOMIC_SEQ_CST)) {
		__atomic_fetch_add(&t->irq_count, 1, __ATOMIC_RELAXED);
		if (t->irq_fd >= 0)
			(void)eventfd_write(t->irq_fd, 1);
	}
	if ((t->st.status & VIRTIO_STATUS_DRIVER_OK) && t->ops->queue_notify)
		for (uint16_t q = 0; q < t->ops->num_queues; q++)
			if (t->st.queues[q].ready)
				t->ops->queue_notify(t->dev, q);
	pthread_mutex_unlock(&t->lock);
}
