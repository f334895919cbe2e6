#include "core/vm_devices.h"

#include "core/vm_state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "arch/x86_64/layout.h"
#include "backend/disk_open.h"
#include "backend/tap.h"
#include "errf.h"
#include "jail/jail.h"
#include "virtio/blk.h"
#include "virtio/net.h"
#include "virtio/rng.h"
#include "virtio/vsock.h"

/* Interrupt lines for virtio-mmio devices, in order.  The ISA lines that
 * Linux expects for legacy devices (0 timer, 1 keyboard, 2 cascade, 3/4
 * serial, 8 RTC, 12 mouse) are skipped. */
static const uint8_t virtio_gsis[] = { 5, 6, 7, 9, 10, 11, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23 };
/* VM_MAX_DISKS disks plus vsock, and room for net and rng. */

/* Virtio devices take MMIO slots and GSIs in the device table's order
 * (device_types below). */
static uint64_t slot_base(unsigned int slot)
{
	return X86_MMIO_DEVICES_START + (uint64_t)slot * VIRTIO_MMIO_SIZE;
}

/* The transport configuration of virtio slot `slot`. */
static struct virtio_mmio_cfg slot_cfg(struct vm *vm, unsigned int slot)
{
	return (struct virtio_mmio_cfg){
		.base = slot_base(slot),
		.gsi = virtio_gsis[slot],
		.vm_fd = vm->vm_fd,
		.mem = &vm->mem,
		.loop = &vm->loop,
		.bus = &vm->mmio,
	};
}

/* The TAP is opened with the disks, before KVM: a bad fd or name is bad
 * input, reported before anything exists. */
static int open_net(struct vm *vm, const struct vm_net_config *nc, char *err, size_t errlen)
{
	struct tap *t = calloc(1, sizeof(*t));
	if (!t)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = nc->fd >= 0 ? tap_open_fd(t, nc->fd, err, errlen)
	                    : tap_open_name(t, nc->tap_name, err, errlen);
	if (r < 0) {
		tap_close(t);
		free(t);
		return r;
	}
	vm->net_backend = t;
	return 0;
}

int vm_devices_open_disks(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
{
	_Static_assert(sizeof(virtio_gsis) >= VM_MAX_DEVICES, "a GSI for every device");
	if (cfg->net.enabled) {
		int r = open_net(vm, &cfg->net, err, errlen);
		if (r < 0)
			return r;
	}
	for (unsigned int i = 0; i < cfg->ndisks; i++) {
		const struct vm_disk_config *dc = &cfg->disks[i];
		struct disk *d = NULL;
		char msg[256];
		int r = disk_open_format(dc->path, dc->format, dc->read_only, &d, msg, sizeof(msg));
		if (r < 0) {
			snprintf(err, errlen, "cannot open disk '%s': %s", dc->path,
			         r == -EBUSY ? "it is in use by another VM" : msg);
			return r;
		}
		if (dc->id[0])
			disk_set_id(d, dc->id);
		d->max_file = dc->max_file;
		vm->disk_paths[i] = strdup(dc->path);
		if (!vm->disk_paths[i]) {
			disk_close(d);
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		vm->disk_backends[i] = d;
		vm->ndisks = i + 1;
	}
	return 0;
}

int vm_devices_cmdline(const struct vm *vm, unsigned int slot, char *buf, size_t len)
{
	(void)vm;
	return snprintf(buf, len, " virtio_mmio.device=%uK@0x%llx:%u", VIRTIO_MMIO_SIZE / 1024,
	                (unsigned long long)slot_base(slot), virtio_gsis[slot]);
}

static void serial_irq(void *opaque)
{
	struct vm *vm = opaque;
	uint64_t one = 1;
	(void)!write(vm->serial_irqfd, &one, sizeof(one));
}

/* A panicking guest (panic=1) resets a second later; remember the panic so
 * that reset is reported as what it is. */
static void serial_panic(void *opaque, const char *msg)
{
	struct vm *vm = opaque;
	pthread_mutex_lock(&vm->lock);
	vm->guest_panicked = true;
	snprintf(vm->panic_msg, sizeof(vm->panic_msg), "%s", msg);
	pthread_mutex_unlock(&vm->lock);
}

static void i8042_reset(void *opaque)
{
	struct vm *vm = opaque;
	vm_guest_reset(vm, "the guest reset through the i8042");
}

static void console_input(void *opaque, uint32_t events)
{
	struct vm *vm = opaque;
	uint8_t buf[256];
	(void)events;
	ssize_t n = read(vm->console_in_fd, buf, sizeof(buf));
	if (n > 0) {
		serial_input(&vm->serial, buf, (size_t)n);
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		/* End of input: stop watching, the guest keeps its console. */
		(void)evloop_del(&vm->loop, vm->console_in_fd);
		vm->console_in_fd = -1;
	}
}

static void console_flush(void *opaque, uint32_t events)
{
	struct vm *vm = opaque;
	uint64_t n;
	(void)events;
	/* #syscalls: read (I/O thread, the console's flush timerfd) */
	if (read(vm->console_flush_fd, &n, sizeof(n)) == sizeof(n))
		serial_flush_timer(&vm->serial);
}

/* The console file: never through a symbolic link (someone else's link in
 * a shared directory would point our writes anywhere), truncated only once
 * it is known to be a regular file, and then capped. */
static int open_console_file(struct vm *vm, const struct vm_config *cfg, uint64_t *cap, char *err,
                             size_t errlen)
{
	int fd = open(cfg->console_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "cannot open console file '%s': %s", cfg->console_path,
		         e == ELOOP ? "it is a symbolic link (refused)" : strerror(e));
		return -e;
	}
	vm->console_out_fd = fd;
	vm->console_out_owned = true;
	struct stat st;
	*cap = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		if (ftruncate(fd, 0) < 0) {
			int e = errno;
			snprintf(err, errlen, "cannot truncate console file '%s': %s",
			         cfg->console_path, strerror(e));
			return -e;
		}
		*cap = cfg->console_max ? cfg->console_max : VM_CONSOLE_MAX_DEFAULT;
	}
	return 0;
}

static int create_console(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
{
	uint64_t cap = 0;
	int r;
	switch (cfg->console) {
	case VM_CONSOLE_STDIO:
		vm->console_out_fd = STDOUT_FILENO;
		vm->console_in_fd = STDIN_FILENO;
		break;
	case VM_CONSOLE_FILE:
		if ((r = open_console_file(vm, cfg, &cap, err, errlen)) < 0)
			return r;
		break;
	case VM_CONSOLE_NONE:
		break;
	}
	vm->serial_irqfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (vm->serial_irqfd < 0)
		return -errno;
	/* Without a KVM VM (unit tests of the device set) the line goes nowhere,
	 * as virtio_mmio_init() leaves a transport without one unwired. */
	struct kvm_irqfd irqfd = { .fd = (uint32_t)vm->serial_irqfd, .gsi = SERIAL_COM1_IRQ };
	if (vm->vm_fd >= 0 && ioctl(vm->vm_fd, KVM_IRQFD, &irqfd) < 0) {
		snprintf(err, errlen, "KVM_IRQFD for the serial port: %s", strerror(errno));
		return -errno;
	}
	serial_init(&vm->serial, vm->console_out_fd, serial_irq, serial_panic, vm);
	vm->serial_ready = true;
	if (vm->console_out_fd >= 0) {
		/* #syscalls: timerfd_create (main thread, at setup) */
		vm->console_flush_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		r = vm->console_flush_fd < 0
		        ? -errno
		        : evloop_add(&vm->loop, vm->console_flush_fd, EPOLLIN, console_flush, vm);
		if (r < 0) {
			snprintf(err, errlen, "cannot set up the console's flush timer: %s",
			         strerror(-r));
			return r;
		}
		serial_set_output(&vm->serial, vm->console_out_fd, cap, vm->console_flush_fd);
	}
	if (vm->console_in_fd >= 0) {
		r = evloop_add(&vm->loop, vm->console_in_fd, EPOLLIN, console_input, vm);
		/* /dev/null and regular files cannot be polled: no input then. */
		if (r < 0)
			vm->console_in_fd = -1;
	}
	return 0;
}

/* ---- the virtio devices: one row per type ---- */

static unsigned int count_disks(const struct vm *vm, const struct vm_config *cfg)
{
	(void)cfg;
	return vm->ndisks;
}

static int create_disk(struct vm *vm, const struct vm_config *cfg, unsigned int i,
                       const struct virtio_mmio_cfg *mc, void **out, char *err, size_t errlen)
{
	const struct vm_disk_config *dc = &cfg->disks[i];
	struct vblk *b = NULL;
	int r = vblk_create(mc, vm->disk_backends[i], &b);
	if (r < 0)
		return errf(err, errlen, r, "cannot create virtio-blk for '%s': %s", dc->path,
		            strerror(-r));
	/* The device serves it; the VM still owns it (vblk.h: the disk stays
	 * the caller's), through the device from now on: its ops' destroy
	 * closes whatever disk the device holds then (a snapshot may have
	 * swapped in a fresh overlay). */
	vm->disk_backends[i] = NULL;
	*out = b;
	const struct vblk_limits lim = { .bps = dc->bps,
		                         .bps_burst = dc->bps_burst,
		                         .iops = dc->iops,
		                         .iops_burst = dc->iops_burst };
	if ((r = vblk_set_limits(b, &lim)) < 0)
		return errf(err, errlen, r, "cannot rate-limit disk '%s': %s", dc->path,
		            strerror(-r));
	return 0;
}

static unsigned int count_vsock(const struct vm *vm, const struct vm_config *cfg)
{
	(void)vm;
	return cfg->vsock_path ? 1 : 0;
}

static int create_vsock(struct vm *vm, const struct vm_config *cfg, unsigned int i,
                        const struct virtio_mmio_cfg *mc, void **out, char *err, size_t errlen)
{
	(void)i;
	uint64_t cid = cfg->vsock_cid ? cfg->vsock_cid : VSOCK_DEFAULT_GUEST_CID;
	vm->vsock_cid = cid;
	struct vsock *v = NULL;
	int r = vsock_create(mc, cid, cfg->vsock_path, &v);
	if (r < 0)
		return errf(err, errlen, r, "cannot create vsock at '%s': %s", cfg->vsock_path,
		            r == -EADDRINUSE     ? "in use by a running VMM"
		            : r == -EEXIST       ? "the path exists and is not a socket"
		            : r == -ENAMETOOLONG ? "the path is too long for a Unix socket"
		                                 : strerror(-r));
	*out = v;
	return 0;
}

/* Every VM has a virtio-rng. */
static unsigned int count_one(const struct vm *vm, const struct vm_config *cfg)
{
	(void)vm;
	(void)cfg;
	return 1;
}

static int create_rng(struct vm *vm, const struct vm_config *cfg, unsigned int i,
                      const struct virtio_mmio_cfg *mc, void **out, char *err, size_t errlen)
{
	(void)vm;
	(void)cfg;
	(void)i;
	struct vrng *rng = NULL;
	int r = vrng_create(mc, &rng);
	if (r < 0)
		return errf(err, errlen, r, "cannot create virtio-rng: %s", strerror(-r));
	*out = rng;
	return 0;
}

static unsigned int count_net(const struct vm *vm, const struct vm_config *cfg)
{
	(void)vm;
	return cfg->net.enabled ? 1 : 0;
}

static int create_net(struct vm *vm, const struct vm_config *cfg, unsigned int i,
                      const struct virtio_mmio_cfg *mc, void **out, char *err, size_t errlen)
{
	(void)i;
	const struct vm_net_config *nc = &cfg->net;
	static const uint8_t default_mac[6] = VNET_DEFAULT_MAC;
	char name[sizeof(vm->net_backend->name)];
	snprintf(name, sizeof(name), "%s", vm->net_backend->name);
	struct vnet *n = NULL;
	int r = vnet_create(mc, vm->net_backend, nc->mac_set ? nc->mac : default_mac, &n);
	free(vm->net_backend); /* its fd is the device's now, or closed */
	vm->net_backend = NULL;
	if (r < 0)
		return errf(err, errlen, r, "cannot create virtio-net on TAP %s: %s", name,
		            strerror(-r));
	*out = n;
	const struct vnet_limits lim = {
		.rx_bps = nc->rx_bps,
		.rx_bps_burst = nc->rx_bps_burst,
		.rx_pps = nc->rx_pps,
		.rx_pps_burst = nc->rx_pps_burst,
		.tx_bps = nc->tx_bps,
		.tx_bps_burst = nc->tx_bps_burst,
		.tx_pps = nc->tx_pps,
		.tx_pps_burst = nc->tx_pps_burst,
	};
	if ((r = vnet_set_limits(n, &lim)) < 0)
		return errf(err, errlen, r, "cannot rate-limit the NIC: %s", strerror(-r));
	return 0;
}

/* A restored NIC needs a new TAP (--net), and none without one; it keeps
 * the snapshot's MAC. */
static int restore_net_config(struct vm_config *cfg, const void *state, char *err, size_t errlen)
{
	struct vm_net_config *net = &cfg->net;
	const struct vnet_state *st = state;
	if (!st) {
		if (net->enabled)
			return errf(err, errlen, -EINVAL, "the snapshot has no NIC (drop --net)");
		return 0;
	}
	if (!net->enabled)
		return errf(err, errlen, -EINVAL,
		            "the snapshot has a NIC: give --net fd=N or --net tap=NAME");
	if (net->mac_set && memcmp(net->mac, st->mac, 6))
		return errf(err, errlen, -EINVAL,
		            "--net mac= differs from the snapshot's MAC (leave it out)");
	memcpy(net->mac, st->mac, 6);
	net->mac_set = true;
	return 0;
}

/* The device table.  Its order is the slot order, which snapshots keep:
 * disks, vsock, rng, then the NIC (last, so the slots of snapshots without
 * one stay put).  A new type goes at the end. */
static const struct vm_device_type device_types[] = {
	{ "disks", "", &vblk_vdev_ops, count_disks, create_disk, NULL },
	{ "vsock", "", &vsock_vdev_ops, count_vsock, create_vsock, NULL },
	{ "rng", "", &vrng_vdev_ops, count_one, create_rng, NULL },
	{ "net", "NETD", &vnet_vdev_ops, count_net, create_net, restore_net_config },
};
#define NTYPES (sizeof(device_types) / sizeof(device_types[0]))

unsigned int vm_devices_count(const struct vm *vm, const struct vm_config *cfg)
{
	unsigned int n = 0;
	for (size_t t = 0; t < NTYPES; t++)
		n += device_types[t].count(vm, cfg);
	return n;
}

int vm_devices_restore_config(struct vm_config *cfg, vm_devices_state_fn state, void *ctx,
                              char *err, size_t errlen)
{
	for (size_t t = 0; t < NTYPES; t++) {
		const struct vm_device_type *type = &device_types[t];
		if (!type->tag[0] || !type->restore_config)
			continue;
		const void *st = state(ctx, type->tag, 0, type->ops->state_size);
		int r = type->restore_config(cfg, st, err, errlen);
		if (r < 0)
			return r;
	}
	return 0;
}

unsigned int vm_devices_saved_sections(vm_devices_state_fn state, void *ctx)
{
	unsigned int n = 0;
	for (size_t t = 0; t < NTYPES; t++) {
		const struct vm_device_type *type = &device_types[t];
		if (!type->tag[0])
			continue;
		while (state(ctx, type->tag, n, type->ops->state_size))
			n++;
	}
	return n;
}

static int create_virtio(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
{
	for (size_t t = 0; t < NTYPES; t++) {
		const struct vm_device_type *type = &device_types[t];
		unsigned int count = type->count(vm, cfg);
		for (unsigned int i = 0; i < count; i++) {
			struct virtio_mmio_cfg mc = slot_cfg(vm, vm->ndevs);
			void *dev = NULL;
			int r = type->create(vm, cfg, i, &mc, &dev, err, errlen);
			if (dev)
				vm->devs[vm->ndevs++] = (struct vm_device){ type, dev, i };
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int vm_devices_create(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
{
	int r = create_console(vm, cfg, err, errlen);
	if (r < 0)
		return r;
	i8042_init(&vm->i8042, i8042_reset, vm);
	vm->i8042_ready = true;
	vm->boot_timer.log_fd = STDERR_FILENO;
	if ((r = bus_register(&vm->pio, SERIAL_COM1_BASE, 8, serial_io, &vm->serial, "serial")) ||
	    (r = bus_register(&vm->pio, I8042_DATA_PORT, 1, i8042_data_io, &vm->i8042,
	                      "i8042-data")) ||
	    (r = bus_register(&vm->pio, I8042_COMMAND_PORT, 1, i8042_cmd_io, &vm->i8042,
	                      "i8042-cmd")) ||
	    (r = bus_register(&vm->pio, BOOT_TIMER_PORT, 1, boot_timer_io, &vm->boot_timer,
	                      "boot-timer"))) {
		snprintf(err, errlen, "cannot place legacy devices: %s", strerror(-r));
		return r;
	}
	return create_virtio(vm, cfg, err, errlen);
}

struct virtio_mmio *vm_device_transport(const struct vm_device *d)
{
	return d->type->ops->transport(d->dev);
}

void *vm_device_find(struct vm *vm, const char *key, unsigned int index)
{
	for (unsigned int i = 0; i < vm->ndevs; i++)
		if (!strcmp(vm->devs[i].type->key, key) && vm->devs[i].index == index)
			return vm->devs[i].dev;
	return NULL;
}

struct vblk *vm_disk(struct vm *vm, unsigned int i)
{
	return vm_device_find(vm, "disks", i);
}

struct vnet *vm_net(struct vm *vm)
{
	return vm_device_find(vm, "net", 0);
}
void vm_disk_io(struct vm *vm, uint64_t *read, uint64_t *written)
{
	*read = *written = 0;
	for (unsigned int i = 0; i < vm->ndisks; i++) {
		uint64_t r, w;
		vblk_io_counts(vm_disk(vm, i), &r, &w);
		*read += r;
		*written += w;
	}
}

int vm_enter_root(struct vm *vm, const char *root, char *err, size_t errlen)
{
	char in[PATH_MAX];
	for (unsigned int i = 0; i < vm->ndisks; i++) {
		/* A disk outside the jail keeps its host name: nothing opens it by
		 * path again unless a snapshot freezes it, which then fails. */
		if (!vm->disk_paths[i] || jail_path(root, vm->disk_paths[i], in, sizeof(in)) < 0)
			continue;
		char *p = strdup(in);
		if (!p)
			return errf(err, errlen, -ENOMEM, "out of memory");
		free(vm->disk_paths[i]);
		vm->disk_paths[i] = p;
	}
	struct vsock *vsock = vm_device_find(vm, "vsock", 0);
	if (!vsock)
		return 0;
	const char *host = vsock_uds_path(vsock);
	int r = jail_path(root, host, in, sizeof(in));
	if (r < 0)
		return errf(err, errlen, r, "the vsock socket %s is outside the jail %s", host,
		            root);
	r = vsock_set_uds_path(vsock, in);
	if (r < 0)
		return errf(err, errlen, r, "vsock path %s: %s", in, strerror(-r));
	return 0;
}

void vm_disk_throttled(struct vm *vm, uint64_t *events, uint64_t *ns)
{
	*events = *ns = 0;
	for (unsigned int i = 0; i < vm->ndisks; i++) {
		uint64_t e, n;
		vblk_throttle_counts(vm_disk(vm, i), &e, &n);
		*events += e;
		*ns += n;
	}
}

void vm_devices_destroy(struct vm *vm)
{
	for (unsigned int i = vm->ndevs; i-- > 0;) {
		vm->devs[i].type->ops->destroy(vm->devs[i].dev);
		vm->devs[i] = (struct vm_device){ 0 };
	}
	vm->ndevs = 0;
	if (vm->net_backend) {
		tap_close(vm->net_backend);
		free(vm->net_backend);
		vm->net_backend = NULL;
	}
	/* A disk no device took yet (a start that failed in between). */
	for (unsigned int i = 0; i < VM_MAX_DISKS; i++) {
		disk_close(vm->disk_backends[i]);
		vm->disk_backends[i] = NULL;
		free(vm->disk_paths[i]);
		vm->disk_paths[i] = NULL;
	}
	if (vm->serial_ready)
		serial_destroy(&vm->serial); /* writes out the last partial line */
	if (vm->console_flush_fd >= 0) {
		(void)evloop_del(&vm->loop, vm->console_flush_fd);
		close(vm->console_flush_fd);
		vm->console_flush_fd = -1;
	}
	if (vm->i8042_ready)
		i8042_destroy(&vm->i8042);
	if (vm->serial_irqfd >= 0)
		close(vm->serial_irqfd);
	if (vm->console_out_owned)
		close(vm->console_out_fd);
	vm->serial_irqfd = -1;
	vm->console_out_fd = -1;
	vm->serial_ready = vm->i8042_ready = vm->console_out_owned = false;
}
