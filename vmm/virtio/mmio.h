/* virtio-mmio transport, modern register layout (Version 2, virtio 1.x 4.2).
 *
 * A device fills a `struct virtio_dev_ops` with designated initializers and
 * embeds a `struct virtio_mmio`; the transport owns the register file, the
 * queues' plain state, feature negotiation, notification and interrupts.
 *
 * With a VM (cfg.vm_fd >= 0) queue notifications arrive on ioeventfds and
 * interrupts leave through an irqfd, so neither needs a vCPU exit to user
 * space.  Without one (unit tests, fuzzing) a QueueNotify write calls
 * ops->queue_notify directly and interrupts are counted in irq_count.
 *
 * Threading: register accesses come from vCPU threads (any number), queue
 * work runs on the VM's I/O loop thread.  `lock` serialises the register
 * file against queue work, so a reset never tears a request in flight. */
#ifndef COVE_VIRTIO_MMIO_H
#define COVE_VIRTIO_MMIO_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/bus.h"
#include "base/evloop.h"
#include "base/guest_mem.h"
#include "virtio/queue.h"
#include "virtio/virtio.h"

/* Register offsets (4.2.2).  All registers are 32 bits wide. */
#define VIRTIO_MMIO_MAGIC_VALUE         0x000
#define VIRTIO_MMIO_VERSION             0x004
#define VIRTIO_MMIO_DEVICE_ID           0x008
#define VIRTIO_MMIO_VENDOR_ID           0x00c
#define VIRTIO_MMIO_DEVICE_FEATURES     0x010
#define VIRTIO_MMIO_DEVICE_FEATURES_SEL 0x014
#define VIRTIO_MMIO_DRIVER_FEATURES     0x020
#define VIRTIO_MMIO_DRIVER_FEATURES_SEL 0x024
#define VIRTIO_MMIO_QUEUE_SEL           0x030
#define VIRTIO_MMIO_QUEUE_NUM_MAX       0x034
#define VIRTIO_MMIO_QUEUE_NUM           0x038
#define VIRTIO_MMIO_QUEUE_READY         0x044
#define VIRTIO_MMIO_QUEUE_NOTIFY        0x050
#define VIRTIO_MMIO_INTERRUPT_STATUS    0x060
#define VIRTIO_MMIO_INTERRUPT_ACK       0x064
#define VIRTIO_MMIO_STATUS              0x070
#define VIRTIO_MMIO_QUEUE_DESC_LOW      0x080
#define VIRTIO_MMIO_QUEUE_DESC_HIGH     0x084
#define VIRTIO_MMIO_QUEUE_DRIVER_LOW    0x090
#define VIRTIO_MMIO_QUEUE_DRIVER_HIGH   0x094
#define VIRTIO_MMIO_QUEUE_DEVICE_LOW    0x0a0
#define VIRTIO_MMIO_QUEUE_DEVICE_HIGH   0x0a4
#define VIRTIO_MMIO_CONFIG_GENERATION   0x0fc
#define VIRTIO_MMIO_CONFIG              0x100

#define VIRTIO_MMIO_MAGIC          0x74726976 /* "virt" */
#define VIRTIO_MMIO_VERSION_MODERN 2

/* The window each device registers on the MMIO bus and names on the
 * kernel command line.  Config space is what remains after 0x100. */
#define VIRTIO_MMIO_SIZE        0x1000
#define VIRTIO_MMIO_CONFIG_SIZE (VIRTIO_MMIO_SIZE - VIRTIO_MMIO_CONFIG)

/* InterruptStatus bits. */
#define VIRTIO_MMIO_INT_VRING  0x1 /* used buffer notification */
#define VIRTIO_MMIO_INT_CONFIG 0x2 /* configuration change */

#define VIRTIO_MMIO_MAX_QUEUES 8

/* A device.  Every callback gets the `dev` pointer given to
 * virtio_mmio_init().  Callbacks run with the transport lock held and must
 * not access this device's registers through the bus. */
struct virtio_dev_ops {
	const char *name;     /* for the bus and logs */
	uint32_t device_id;   /* VIRTIO_ID_* */
	uint16_t num_queues;  /* <= VIRTIO_MMIO_MAX_QUEUES */
	uint16_t queue_max;   /* <= VIRTQ_MAX_SIZE */
	uint64_t features;    /* device-specific bits; the transport adds its own */
	uint32_t config_size; /* bytes of config space (<= VIRTIO_MMIO_CONFIG_SIZE) */
	/* Config space access at `offset` (already bounds-checked against
	 * config_size); data arrives zeroed on reads. */
	void (*config_read)(void *dev, uint32_t offset, uint8_t *data, uint32_t len);
	void (*config_write)(void *dev, uint32_t offset, const uint8_t *data, uint32_t len);
	/* The driver notified queue `queue` (ready, DRIVER_OK set); runs on the
	 * I/O loop thread (or the caller's thread without a VM). */
	void (*queue_notify)(void *dev, uint16_t queue);
	/* The driver set DRIVER_OK.  A negative return marks the device
	 * DEVICE_NEEDS_RESET. */
	int (*activate)(void *dev);
	/* The driver reset the device; transport state is already cleared. */
	void (*reset)(void *dev);
};

struct virtio_mmio_cfg {
	uint64_t base;         /* guest physical base of the register window */
	uint32_t gsi;          /* interrupt line (irqfd GSI) */
	int vm_fd;             /* KVM VM fd, or -1 for tests and fuzzing */
	struct guest_mem *mem; /* guest RAM the queues live in */
	struct evloop *loop;   /* I/O loop for ioeventfds; may be NULL if vm_fd < 0 */
	struct bus *bus;       /* MMIO bus the register window goes on */
};

/* The transport's plain state: what a snapshot saves and restores. */
struct virtio_mmio_state {
	uint32_t status;
	uint32_t device_features_sel;
	uint32_t driver_features_sel;
	uint64_t driver_features; /* as written by the driver */
	uint64_t acked_features;  /* accepted at FEATURES_OK */
	uint32_t queue_sel;
	uint32_t interrupt_status; /* accessed atomically */
	uint32_t config_generation;
	struct virtq queues[VIRTIO_MMIO_MAX_QUEUES];
};

struct virtio_mmio;

/* The ioeventfd record of one queue (runtime handle, not state). */
struct virtio_mmio_notifier {
	struct virtio_mmio *t;
	uint16_t queue;
	int fd;
	bool watched;  /* added to the I/O loop */
	bool assigned; /* registered with KVM */
};

struct virtio_mmio {
	struct virtio_mmio_state st;
	/* Runtime, rebuilt on restore. */
	const struct virtio_dev_ops *ops;
	void *dev;
	struct virtio_mmio_cfg cfg;
	pthread_mutex_t lock;
	bool lock_init;
	bool registered; /* on cfg.bus (bus has no unregister: see destroy) */
	int irq_fd;      /* irqfd eventfd, -1 without a VM */
	struct virtio_mmio_notifier notifiers[VIRTIO_MMIO_MAX_QUEUES];
	uint64_t irq_count;     /* interrupts raised; for tests (atomic) */
	uint64_t irq_coalesced; /* used-buffer interrupts already pending (atomic) */
};

/* Sets up the transport for `ops`/`dev` and registers [cfg->base,
 * cfg->base + VIRTIO_MMIO_SIZE) on cfg->bus.  With cfg->vm_fd >= 0 it also
 * creates the irqfd on cfg->gsi and, at init, one ioeventfd per queue
 * (datamatch = queue index, 4 bytes at base + QueueNotify) watched on
 * cfg->loop; notifications for a queue that is not ready are dropped.
 * Call before the vCPUs run.  `t` must stay at its address afterwards (the
 * bus and the loop hold pointers to it).  On error everything done so far
 * is undone, except a bus registration, which cannot be (it is the last
 * step, so a failed init never leaves one).  Returns 0 or -errno. */
int virtio_mmio_init(struct virtio_mmio *t, const struct virtio_mmio_cfg *cfg,
                     const struct virtio_dev_ops *ops, void *dev)
    __attribute__((warn_unused_result));

/* Releases eventfds and KVM registrations.  Call with the vCPUs stopped and
 * the I/O loop not running (not started, or stopped but not yet destroyed),
 * or with cfg.loop NULL.  The bus range stays registered: destroy the
 * device only when the bus is no longer dispatched.  Idempotent, and a
 * no-op after a failed virtio_mmio_init() (which cleans up after itself). */
void virtio_mmio_destroy(struct virtio_mmio *t);

/* The bus callback (exported for tests that bypass a bus). */
void virtio_mmio_access(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);

/* Raises a used-buffer interrupt.  Call from ops callbacks (lock held) or
 * any thread; a device calls it once per batch when virtq_needs_interrupt()
 * says so. */
void virtio_mmio_signal_used(struct virtio_mmio *t);

/* The device's configuration changed: bump ConfigGeneration, interrupt. */
void virtio_mmio_config_changed(struct virtio_mmio *t);

/* Something the driver did broke a queue beyond one request: set
 * DEVICE_NEEDS_RESET and interrupt (4.2.3, 2.1.2). */
void virtio_mmio_needs_reset(struct virtio_mmio *t);

/* Whether feature bit `bit` was accepted at FEATURES_OK. */
bool virtio_mmio_has_feature(const struct virtio_mmio *t, unsigned int bit);

/* Writes "virtio_mmio.device=4K@0x<base>:<gsi>" into buf (NUL-terminated).
 * Returns the length, or -ENOSPC when buf is too small. */
int virtio_mmio_cmdline(const struct virtio_mmio *t, char *buf, size_t len)
    __attribute__((warn_unused_result));

/* Copies the plain state out (under the lock). */
void virtio_mmio_save(struct virtio_mmio *t, struct virtio_mmio_state *out);

/* Replaces the plain state with a saved one after checking every ready
 * queue against guest RAM; calls ops->activate when DRIVER_OK is set.
 * Call before the vCPUs run.  Returns 0, -EINVAL (state left unchanged) or
 * the error of ops->activate (state restored, device not running). */
int virtio_mmio_restore(struct virtio_mmio *t, const struct virtio_mmio_state *in)
    __attribute__((warn_unused_result));

/* Processes every ready queue once, as if the driver had notified it: a
 * restored device may have missed notifications that were still in the
 * saved VMM's eventfds.  And rings the interrupt again when the saved
 * status still has a bit the driver had not acknowledged (its edge may
 * have been lost with the saved VMM's irqfd).  Call before the vCPUs run. */
void virtio_mmio_kick_all(struct virtio_mmio *t);

#endif
