/* Reading and checking a snapshot directory, and restoring a VM from it:
 * snapshot_open() ... vm_restore(). */
#include "snapshot/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "arch/x86_64/layout.h"
#include "core/vm_devices.h"
#include "errf.h"
#include "qcow2_create.h"
#include "snapshot/format.h"
#include "snapshot/prefetch.h"
#include "wsrec.h"

static bool str_ok(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL && s[0] != '\0';
}

/* A device's own section (vm_devices_state_fn), or NULL. */
static const void *saved_section(void *ctx, const char *tag, unsigned int index, size_t size)
{
	struct snapshot *s = ctx;
	return sf_find(&s->sf, SF_TAG_STR(tag), index, size);
}

static int check_conf(const struct snap_conf *c, unsigned int nsaved, char *err, size_t errlen)
{
	if (c->cpus < 1 || c->cpus > VM_MAX_VCPUS)
		return errf(err, errlen, -EINVAL, "snapshot has %u vCPUs", c->cpus);
	if (c->ndisks > VM_MAX_DISKS)
		return errf(err, errlen, -EINVAL, "snapshot has %u disks", c->ndisks);
	if (c->memory_bytes < ((uint64_t)COVE_MEMORY_MIN_MIB << 20) ||
	    c->memory_bytes > (1ull << 40) || c->memory_bytes % PAGE)
		return errf(err, errlen, -EINVAL, "snapshot has a bad memory size (%llu bytes)",
		            (unsigned long long)c->memory_bytes);
	if (c->ndevices != c->ndisks + (c->has_vsock ? 1 : 0) + 1 + nsaved)
		return errf(err, errlen, -EINVAL, "snapshot's device list is inconsistent");
	for (unsigned int i = 0; i < c->ndisks; i++) {
		const struct snap_disk *d = &c->disks[i];
		if (!str_ok(d->file, sizeof(d->file)) || !memchr(d->id, '\0', sizeof(d->id)))
			return errf(err, errlen, -EINVAL, "snapshot disk %u has a bad name", i);
		if (strcmp(d->format, "raw") && strcmp(d->format, "qcow2"))
			return errf(err, errlen, -EINVAL, "snapshot disk %u has no known format",
			            i);
		if (d->in_snapshot && (strchr(d->file, '/') || d->file[0] == '.'))
			return errf(err, errlen, -EINVAL,
			            "snapshot disk %u names a file outside it", i);
		if (!d->in_snapshot && d->file[0] != '/')
			return errf(err, errlen, -EINVAL, "snapshot disk %u has a relative path",
			            i);
	}
	return 0;
}

/* A state file is the snapshot's, which may come from anyone: a disk it
 * names must resolve (symlinks followed, "..", all) inside the snapshot
 * directory dir (itself resolved), or a shipped snapshot could hand the
 * guest any host file the user can read.  path is replaced by the
 * resolved path, which is what gets opened. */
static int disk_inside(const char *dir, char *path, char *err, size_t errlen)
{
	char *real = realpath(path, NULL);
	if (!real)
		return errf(err, errlen, -errno, "disk '%s': %s", path, strerror(errno));
	size_t dl = strlen(dir);
	bool inside = !strncmp(real, dir, dl) && real[dl] == '/' && real[dl + 1];
	if (!inside) {
		int r = errf(err, errlen, -EPERM,
		             "disk '%s' lies outside the snapshot directory (resolves to '%s')",
		             path, real);
		free(real);
		return r;
	}
	snprintf(path, PATH_MAX, "%s", real);
	free(real);
	if (access(path, R_OK) < 0)
		return errf(err, errlen, -errno, "disk '%s': %s", path, strerror(errno));
	return 0;
}

int snapshot_open(const char *dir, const char *memory, struct snapshot **out, char *err,
                  size_t errlen)
{
	*out = NULL;
	struct snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return errf(err, errlen, -ENOMEM, "out of memory");
	s->mem_fd = -1;
	s->ws_fd = -1;
	int r;
	char *abs = realpath(dir, NULL);
	if (!abs) {
		r = errf(err, errlen, -errno, "snapshot '%s': %s", dir, strerror(errno));
		goto fail;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", abs);
	free(abs);
	int dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		r = errf(err, errlen, -errno, "snapshot '%s': %s", dir, strerror(errno));
		goto fail;
	}
	char msg[256];
	r = sf_read_file(&s->sf, dirfd, SNAPSHOT_STATE_FILE, msg, sizeof(msg));
	if (r < 0) {
		close(dirfd);
		errf(err, errlen, r, "snapshot '%s' refused: %s", dir, msg);
		goto fail;
	}
	s->mem_fd = memory ? open(memory, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	if (memory && s->mem_fd < 0) {
		/* The copy is a speed-up only (a pooled VMM whose mount namespace
		 * predates the cache's mount would not see it). */
		fprintf(stderr,
		        "cove-vmm: cannot open the memory copy %s (%s): mapping the "
		        "snapshot's own memory file\n",
		        memory, strerror(errno));
		memory = NULL;
	}
	/* The copy is in use while this process lives: the cache evicts no
	 * copy whose exclusive flock is refused (lib/memcache.c). */
	if (memory)
		(void)flock(s->mem_fd, LOCK_SH | LOCK_NB);
	else
		s->mem_fd = openat(dirfd, SNAPSHOT_MEMORY_FILE, O_RDONLY | O_CLOEXEC);
	int e = errno;
	/* Optional; checked when it is applied (snapshot/prefetch.c). */
	s->ws_fd = openat(dirfd, WSREC_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	close(dirfd);
	if (s->mem_fd < 0) {
		r = errf(err, errlen, -e, "snapshot '%s' refused: no memory file: %s", dir,
		         strerror(e));
		goto fail;
	}
	s->conf = sf_find(&s->sf, TAG_CONF, 0, sizeof(*s->conf));
	s->vmst = sf_find(&s->sf, TAG_VMST, 0, sizeof(*s->vmst));
	if (!s->conf || !s->vmst) {
		r = errf(err, errlen, -EINVAL,
		         "snapshot '%s' refused: its state file lacks the %s section", dir,
		         s->conf ? "VM" : "configuration");
		goto fail;
	}
	r = check_conf(s->conf, vm_devices_saved_sections(saved_section, s), msg, sizeof(msg));
	if (r < 0) {
		errf(err, errlen, r, "snapshot '%s' refused: %s", dir, msg);
		goto fail;
	}
	struct stat st;
	if (fstat(s->mem_fd, &st) < 0 || (uint64_t)st.st_size != s->conf->memory_bytes) {
		r = errf(err, errlen, -EINVAL,
		         "snapshot '%s' refused: its memory file is %lld bytes, not %llu", dir,
		         (long long)st.st_size, (unsigned long long)s->conf->memory_bytes);
		goto fail;
	}
	for (unsigned int i = 0; i < s->conf->cpus; i++) {
		const struct x86_vcpu_state *cs =
		    sf_find(&s->sf, TAG_VCPU, i, sizeof(struct x86_vcpu_state));
		if (!cs || x86_vcpu_state_check(cs) < 0) {
			r = errf(err, errlen, -EINVAL,
			         "snapshot '%s' refused: vCPU %u's state is missing or malformed",
			         dir, i);
			goto fail;
		}
	}
	for (unsigned int i = 0; i < s->conf->ndevices; i++)
		if (!sf_find(&s->sf, TAG_MMIO, i, sizeof(struct virtio_mmio_state))) {
			r = errf(err, errlen, -EINVAL,
			         "snapshot '%s' refused: device %u's state is missing", dir, i);
			goto fail;
		}
	const struct serial_state *ss = sf_find(&s->sf, TAG_SERI, 0, sizeof(struct serial_state));
	const struct i8042_state *ks = sf_find(&s->sf, TAG_KBDC, 0, sizeof(struct i8042_state));
	if (!ss || !ks || ss->rx_head >= SERIAL_FIFO_SIZE || ss->rx_count > SERIAL_FIFO_SIZE ||
	    ks->out_head >= sizeof(ks->out) || ks->out_count > sizeof(ks->out)) {
		r = errf(err, errlen, -EINVAL,
		         "snapshot '%s' refused: the console or keyboard state is malformed", dir);
		goto fail;
	}
	/* Does it fit this host? */
	struct sysinfo si;
	if (sysinfo(&si) == 0 &&
	    s->conf->memory_bytes > (uint64_t)si.totalram * (uint64_t)si.mem_unit) {
		r = errf(err, errlen, -ENOMEM,
		         "snapshot '%s' does not fit this host: %llu MiB of guest memory, %llu MiB "
		         "of host memory",
		         dir, (unsigned long long)(s->conf->memory_bytes >> 20),
		         (unsigned long long)(((uint64_t)si.totalram * si.mem_unit) >> 20));
		goto fail;
	}
	for (unsigned int i = 0; i < s->conf->ndisks; i++) {
		const struct snap_disk *d = &s->conf->disks[i];
		size_t dl = strlen(s->dir), fl = strlen(d->file);
		if (d->in_snapshot && dl + 1 + fl >= PATH_MAX) {
			r = errf(err, errlen, -ENAMETOOLONG, "snapshot '%s': disk path too long",
			         dir);
			goto fail;
		}
		if (d->in_snapshot) {
			memcpy(s->disk_paths[i], s->dir, dl);
			s->disk_paths[i][dl] = '/';
			memcpy(s->disk_paths[i] + dl + 1, d->file, fl + 1);
		} else {
			memcpy(s->disk_paths[i], d->file, fl + 1);
		}
		r = disk_inside(s->dir, s->disk_paths[i], err, errlen);
		if (r < 0) {
			char why[PATH_MAX + 64];
			snprintf(why, sizeof(why), "%s", err);
			errf(err, errlen, r, "snapshot '%s' refused: %s", dir, why);
			goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	snapshot_close(s);
	return r;
}

static int snapshot_check_host(struct snapshot *s, const struct kvm_cpuid2 *supported, char *err,
                               size_t errlen)
{
	for (unsigned int i = 0; i < s->conf->cpus; i++) {
		const struct x86_vcpu_state *cs =
		    sf_find(&s->sf, TAG_VCPU, i, sizeof(struct x86_vcpu_state));
		char msg[200];
		int r = x86_cpuid_compatible(supported, cs, msg, sizeof(msg));
		if (r < 0)
			return errf(err, errlen, r, "snapshot '%s' does not fit this host: %s",
			            s->dir, msg);
	}
	return 0;
}

int snapshot_vm_config(struct snapshot *s, const char *overlay_dir, struct vm_config *cfg,
                       char *err, size_t errlen)
{
	const struct snap_conf *c = s->conf;
	cfg->cpus = c->cpus;
	cfg->memory_mib = c->memory_bytes >> 20;
	cfg->ndisks = c->ndisks;
	cfg->vsock_cid = c->vsock_cid;
	for (unsigned int i = 0; i < c->ndisks; i++) {
		struct vm_disk_config *dc = &cfg->disks[i];
		memset(dc, 0, sizeof(*dc));
		snprintf(dc->id, sizeof(dc->id), "%s", c->disks[i].id);
		dc->read_only = c->disks[i].read_only;
		if (dc->read_only) {
			dc->path = s->disk_paths[i];
			dc->format = c->disks[i].format;
			continue;
		}
		dc->format = "qcow2";
		if (!overlay_dir)
			return errf(err, errlen, -EINVAL,
			            "the snapshot has a writable disk: give --overlay-dir DIR");
		char *top = malloc(PATH_MAX);
		if (!top)
			return errf(err, errlen, -ENOMEM, "out of memory");
		snprintf(top, PATH_MAX, "%s/disk%u.qcow2", overlay_dir, i);
		char msg[256];
		int r = qcow2_create_overlay_format(top, s->disk_paths[i], c->disks[i].format, 0,
		                                    msg, sizeof(msg));
		if (r < 0) {
			free(top);
			return errf(err, errlen, r, "cannot create an overlay for disk %u: %s", i,
			            msg);
		}
		/* The path string now belongs to the snapshot's lifetime. */
		snprintf(s->disk_paths[i], sizeof(s->disk_paths[i]), "%s", top);
		free(top);
		dc->path = s->disk_paths[i];
	}
	return 0;
}

int snapshot_devices_config(struct snapshot *s, struct vm_config *cfg, char *err, size_t errlen)
{
	return vm_devices_restore_config(cfg, saved_section, s, err, errlen);
}

bool snapshot_has_vsock(const struct snapshot *s)
{
	return s->conf->has_vsock;
}

static int snapshot_memory_fd(const struct snapshot *s)
{
	return s->mem_fd;
}

static int snapshot_restore_cpus(struct snapshot *s, struct vm *vm, char *err, size_t errlen)
{
	int r = x86_vm_state_restore(vm->vm_fd, s->vmst);
	if (r < 0)
		return errf(err, errlen, r, "cannot restore the irqchip/PIT/clock: %s",
		            strerror(-r));
	for (unsigned int i = 0; i < vm->ncpus; i++) {
		const struct x86_vcpu_state *cs =
		    sf_find(&s->sf, TAG_VCPU, i, sizeof(struct x86_vcpu_state));
		const char *what = "";
		r = x86_vcpu_state_restore(vm->kvm_fd, vm->vcpus[i].fd, cs, &what);
		if (r < 0)
			return errf(err, errlen, r, "cannot restore vCPU %u (%s): %s", i, what,
			            strerror(-r));
	}
	return 0;
}

static int snapshot_restore_devices(struct snapshot *s, struct vm *vm, char *err, size_t errlen)
{
	const struct serial_state *ss = sf_find(&s->sf, TAG_SERI, 0, sizeof(*ss));
	const struct i8042_state *ks = sf_find(&s->sf, TAG_KBDC, 0, sizeof(*ks));
	pthread_mutex_lock(&vm->serial.lock);
	vm->serial.s = *ss;
	pthread_mutex_unlock(&vm->serial.lock);
	pthread_mutex_lock(&vm->i8042.lock);
	vm->i8042.s = *ks;
	pthread_mutex_unlock(&vm->i8042.lock);
	if (vm->ndevs != s->conf->ndevices)
		return errf(err, errlen, -EINVAL, "the restored VM has %u devices, the snapshot %u",
		            vm->ndevs, s->conf->ndevices);
	for (unsigned int i = 0; i < vm->ndevs; i++) {
		const struct vm_device *d = &vm->devs[i];
		const struct vdev_ops *ops = d->type->ops;
		const void *st = ops->state_size ? sf_find(&s->sf, SF_TAG_STR(d->type->tag),
		                                           d->index, ops->state_size)
		                                 : NULL;
		if (st)
			ops->restore(d->dev, st);
	}
	for (unsigned int i = 0; i < vm->ndevs; i++) {
		const struct virtio_mmio_state *ms =
		    sf_find(&s->sf, TAG_MMIO, i, sizeof(struct virtio_mmio_state));
		int r = virtio_mmio_restore(vm_device_transport(&vm->devs[i]), ms);
		if (r < 0)
			return errf(err, errlen, r, "cannot restore virtio device %u: %s", i,
			            r == -EINVAL ? "its saved queues do not fit guest memory"
			                         : strerror(-r));
	}
	/* Then what each device does after (the vsock tells the guest its
	 * connections are gone), and catch up on notifications the saved VMM
	 * had not processed yet. */
	for (unsigned int i = 0; i < vm->ndevs; i++)
		if (vm->devs[i].type->ops->restored)
			vm->devs[i].type->ops->restored(vm->devs[i].dev);
	for (unsigned int i = 0; i < vm->ndevs; i++)
		virtio_mmio_kick_all(vm_device_transport(&vm->devs[i]));
	return 0;
}

/* The snapshot as a vm_source (core/vm.h): memory is mapped once KVM's
 * CPUID is known and the snapshot found to fit it; vCPU and device state
 * come from the state file. */
static int restore_memory(struct vm *vm, void *ctx, char *err, size_t errlen)
{
	struct snapshot *s = ctx;
	int r = snapshot_check_host(s, vm->cpuid, err, errlen);
	if (r < 0)
		return r;
	r = gmem_map_private(&vm->mem, snapshot_memory_fd(s), s->conf->memory_bytes >> 20 << 20,
	                     X86_MMIO_HOLE);
	if (r < 0)
		return errf(err, errlen, r, "cannot map the snapshot's memory: %s", strerror(-r));
	/* The working set the first restore recorded, before any vCPU runs. */
	prefetch_restore(&vm->mem, s->ws_fd);
	s->ws_fd = -1;
	return 0;
}

static int restore_vcpus(struct vm *vm, void *ctx, char *err, size_t errlen)
{
	int r = snapshot_restore_cpus(ctx, vm, err, errlen);
	/* The memory slots are set: the working set goes into KVM's page
	 * tables now, not one exit at a time. */
	if (r == 0)
		prefetch_prefault(&vm->mem, vm->vm_fd, vm->vcpus[0].fd);
	return r;
}

static int restore_devices(struct vm *vm, void *ctx, char *err, size_t errlen)
{
	return snapshot_restore_devices(ctx, vm, err, errlen);
}

int vm_restore(struct vm **out, const struct vm_config *cfg, struct snapshot *s, char *err,
               size_t errlen)
{
	const struct vm_source src = {
		.ctx = s,
		.after_kvm = restore_memory,
		.vcpus = restore_vcpus,
		.devices = restore_devices,
	};
	return vm_build(out, cfg, &src, err, errlen);
}

void snapshot_close(struct snapshot *s)
{
	if (!s)
		return;
	sf_reader_free(&s->sf);
	if (s->mem_fd >= 0)
		close(s->mem_fd);
	if (s->ws_fd >= 0)
		close(s->ws_fd);
	free(s);
}
