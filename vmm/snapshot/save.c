/* Saving a running VM to a snapshot directory: vm_snapshot(). */
#include "snapshot/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/disk_open.h"
#include "clock.h"
#include "core/vm_devices.h"
#include "errf.h"
#include "io.h"
#include "qcow2_create.h"
#include "snapshot/format.h"
#include "virtio/blk.h"

static bool all_zero(const uint8_t *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	for (size_t i = 0; i < len / 8; i++)
		if (w[i])
			return false;
	return true;
}

/* Writes the pages of [start, end) that are not all zero. */
static int write_range(int out, const uint8_t *base, uint64_t start, uint64_t end,
                       uint64_t *written)
{
	uint64_t run = start, off = start;
	bool in_run = false;
	for (; off < end; off += PAGE) {
		bool zero = all_zero(base + off, PAGE);
		if (!zero && !in_run) {
			run = off;
			in_run = true;
		} else if (zero && in_run) {
			int r = pwrite_all(out, base + run, off - run, (off_t)run);
			if (r < 0)
				return r;
			*written += off - run;
			in_run = false;
		}
	}
	if (in_run) {
		int r = pwrite_all(out, base + run, end - run, (off_t)run);
		if (r < 0)
			return r;
		*written += end - run;
	}
	return 0;
}

/* Anonymous RAM (a cold boot's): only what is resident can hold data, so
 * mincore() picks the runs to scan; reading the rest would only map zero
 * pages.  A restored VM's private file mapping reports the file's page
 * cache there instead, so it is scanned whole. */
#define RESIDENT_CHUNK 4096 /* pages per mincore() */
static int write_resident(int out, const struct guest_mem *m, uint64_t *written)
{
	unsigned char vec[RESIDENT_CHUNK];
	uint64_t pages = m->ram_size / PAGE;
	for (uint64_t i = 0; i < pages; i += RESIDENT_CHUNK) {
		uint64_t k = pages - i < RESIDENT_CHUNK ? pages - i : RESIDENT_CHUNK;
		if (mincore(m->base + i * PAGE, k * PAGE, vec) < 0)
			return write_range(out, m->base, i * PAGE, m->ram_size, written);
		for (uint64_t j = 0; j < k;) {
			if (!(vec[j] & 1)) {
				j++;
				continue;
			}
			uint64_t e = j;
			while (e < k && (vec[e] & 1))
				e++;
			int r = write_range(out, m->base, (i + j) * PAGE, (i + e) * PAGE, written);
			if (r < 0)
				return r;
			j = e;
		}
	}
	return 0;
}

/* Guest RAM into dir/memory, sparse.  With a memfd only its data ranges
 * are read (reading a hole would allocate it); a restored VM's private
 * mapping is scanned whole. */
static int write_memory(struct vm *vm, int dirfd, uint64_t *written)
{
	const struct guest_mem *m = &vm->mem;
	int out = openat(dirfd, SNAPSHOT_MEMORY_FILE,
	                 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	int r = ftruncate(out, (off_t)m->ram_size) < 0 ? -errno : 0;
	*written = 0;
	if (!r && m->fd >= 0) {
		off_t pos = 0;
		while (!r && (uint64_t)pos < m->ram_size) {
			off_t data = lseek(m->fd, pos, SEEK_DATA);
			if (data < 0)
				break; /* ENXIO: no data after pos */
			off_t hole = lseek(m->fd, data, SEEK_HOLE);
			if (hole < 0 || (uint64_t)hole > m->ram_size)
				hole = (off_t)m->ram_size;
			uint64_t s = (uint64_t)data & ~(uint64_t)(PAGE - 1);
			uint64_t e = ((uint64_t)hole + PAGE - 1) & ~(uint64_t)(PAGE - 1);
			if (e > m->ram_size)
				e = m->ram_size;
			r = write_range(out, m->base, s, e, written);
			pos = (off_t)e;
		}
	} else if (!r && m->fd < 0 && m->base) {
		r = write_resident(out, m, written);
	} else if (!r) {
		r = write_range(out, m->base, 0, m->ram_size, written);
	}
	if (!r && fsync(out) < 0)
		r = -errno;
	close(out);
	return r;
}

/* Moves src to dst; across file systems by copying (reflink, else
 * sparse), durable before src goes. */
static int move_file(const char *src, const char *dst)
{
	if (rename(src, dst) == 0)
		return 0;
	if (errno != EXDEV)
		return -errno;
	int r = copy_file_sparse(src, dst, 0600);
	if (r < 0)
		return r;
	return unlink(src) < 0 ? -errno : 0;
}

static bool is_qcow2(struct disk *d)
{
	return strcmp(d->ops->name, "qcow2") == 0;
}

/* One writable disk: flush, close, move its file into the snapshot,
 * freeze it, and give the device a fresh overlay at the old path.  The
 * formats are known, never probed: a raw disk's content is the guest's and
 * could be a qcow2 header naming any host file as its backing file. */
static int freeze_disk(struct vm *vm, unsigned int i, const char *dir, bool reopen,
                       struct snap_disk *sd, char *err, size_t errlen)
{
	struct vblk *b = vm_disk(vm, i);
	const char *path = vm->disk_paths[i];
	struct disk *old = vblk_disk(b);
	char id[DISK_ID_LEN + 1];
	memcpy(id, old->id, sizeof(id));
	const char *format = is_qcow2(old) ? "qcow2" : "raw";
	int r = disk_flush(old);
	if (r < 0)
		return errf(err, errlen, r, "cannot flush disk '%s': %s", path, strerror(-r));
	snprintf(sd->format, sizeof(sd->format), "%s", format);
	snprintf(sd->file, sizeof(sd->file), "disk%u.%s", i, is_qcow2(old) ? "qcow2" : "img");
	char frozen[PATH_MAX * 2];
	snprintf(frozen, sizeof(frozen), "%s/%s", dir, sd->file);
	disk_close(vblk_swap_disk(b, NULL)); /* drops its exclusive lock */
	char msg[256] = "";
	r = move_file(path, frozen);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "cannot move it into the snapshot: %s", strerror(-r));
		goto back;
	}
	/* Read-only from now on, and still the user's alone (it was created
	 * 0600: never readable by others on the way). */
	(void)chmod(frozen, 0400);
	sd->in_snapshot = 1;
	if (!reopen)
		return 0;
	r = qcow2_create_overlay_format(path, frozen, format, 0, msg, sizeof(msg));
	struct disk *fresh = NULL;
	if (r == 0) {
		r = disk_open_format(path, "qcow2", false, &fresh, msg, sizeof(msg));
		if (r < 0)
			unlink(path);
	}
	if (r == 0) {
		disk_set_id(fresh, id);
		vblk_swap_disk(b, fresh);
		return 0;
	}
	/* Undo: the frozen file goes back to its place and into service. */
	(void)chmod(frozen, 0600);
	if (move_file(frozen, path) < 0)
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "; it stays at '%.180s'",
		         frozen);
	sd->in_snapshot = 0;
back:;
	struct disk *again = NULL;
	char m2[128];
	if (disk_open_format(path, format, false, &again, m2, sizeof(m2)) == 0) {
		disk_set_id(again, id);
		vblk_swap_disk(b, again);
	}
	return errf(err, errlen, r, "disk '%s': %s", path, msg);
}

/* One writable disk into a directory given by fd (a jailed VMM sees no
 * path to it): flushed first, then copied in (reflink, else its data
 * ranges) while the VM goes on with the file it has, or, when the VM
 * stops after the snapshot, moved in.  Either way the frozen file keeps
 * its own backing file name, and the running disk's chain does not grow. */
static int freeze_disk_into(struct vm *vm, unsigned int i, int dirfd, bool resume,
                            struct snap_disk *sd, char *err, size_t errlen)
{
	const char *path = vm->disk_paths[i];
	struct disk *d = vblk_disk(vm_disk(vm, i));
	int r = disk_flush(d);
	if (r < 0)
		return errf(err, errlen, r, "cannot flush disk '%s': %s", path, strerror(-r));
	snprintf(sd->format, sizeof(sd->format), "%s", is_qcow2(d) ? "qcow2" : "raw");
	snprintf(sd->file, sizeof(sd->file), "disk%u.%s", i, is_qcow2(d) ? "qcow2" : "img");
	/* Jailed, the disk is reached through the jail root's fd (the API
	 * thread's filter refuses AT_FDCWD there). */
	int from = AT_FDCWD;
	const char *name = path;
	if (vm->root_fd >= 0) {
		from = vm->root_fd;
		while (*name == '/')
			name++;
	}
	if (!resume && renameat(from, name, dirfd, sd->file) == 0) {
		(void)fchmodat(dirfd, sd->file, 0400, 0);
		sd->in_snapshot = 1;
		return 0;
	}
	r = copy_file_sparse_at(from, name, dirfd, sd->file, 0400);
	if (r < 0)
		return errf(err, errlen, r, "disk '%s': cannot copy it into the snapshot: %s", path,
		            strerror(-r));
	sd->in_snapshot = 1;
	return 0;
}

/* Every disk into conf: a read-only one by name, a writable one frozen
 * into the snapshot (into dirfd when the caller gave the directory as a
 * descriptor, else into dir by path).  *moved once a disk has left its
 * place. */
static int save_disks(struct vm *vm, const char *dir, int dirfd, bool resume,
                      struct snap_conf *conf, bool *moved, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < vm->ndisks; i++) {
		struct snap_disk *sd = &conf->disks[i];
		struct disk *d = vblk_disk(vm_disk(vm, i));
		memcpy(sd->id, d->id, DISK_ID_LEN + 1);
		sd->size = d->size;
		sd->read_only = d->read_only;
		if (d->read_only) {
			snprintf(sd->format, sizeof(sd->format), "%s",
			         is_qcow2(d) ? "qcow2" : "raw");
			/* Jailed, the path is the one it was given (no realpath:
			 * the filter allows no path lookups there). */
			char *abs = vm->root_fd >= 0 ? NULL : realpath(vm->disk_paths[i], NULL);
			snprintf(sd->file, sizeof(sd->file), "%s", abs ? abs : vm->disk_paths[i]);
			free(abs);
			continue;
		}
		int r;
		if (dirfd >= 0)
			r = freeze_disk_into(vm, i, dirfd, resume, sd, err, errlen);
		else
			r = freeze_disk(vm, i, dir, resume, sd, err, errlen);
		if (r < 0)
			return r;
		*moved = true;
	}
	return 0;
}

/* Every virtio device's transport, in slot order, then the devices' own
 * sections under their types' tags (today only the NIC's, NETD 0). */
static int save_devices(struct vm *vm, struct sf_writer *w)
{
	for (unsigned int i = 0; i < vm->ndevs; i++) {
		struct virtio_mmio_state ms;
		virtio_mmio_save(vm_device_transport(&vm->devs[i]), &ms);
		sf_add(w, TAG_MMIO, i, &ms, sizeof(ms));
	}
	for (unsigned int i = 0; i < vm->ndevs; i++) {
		const struct vm_device *d = &vm->devs[i];
		const struct vdev_ops *ops = d->type->ops;
		if (!ops->state_size)
			continue;
		void *st = calloc(1, ops->state_size);
		if (!st)
			return -ENOMEM;
		ops->save(d->dev, st);
		sf_add(w, SF_TAG_STR(d->type->tag), d->index, st, ops->state_size);
		free(st);
	}
	return 0;
}

static int remove_dir(const char *dir)
{
	static const char *names[] = { SNAPSHOT_STATE_FILE, SNAPSHOT_MEMORY_FILE, ".state.tmp" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char p[PATH_MAX * 2];
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	return rmdir(dir);
}

int vm_snapshot(struct vm *vm, const char *dir, int given_dirfd, bool resume,
                struct vm_snapshot_result *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	if (given_dirfd < 0 && (!dir || dir[0] != '/' || strlen(dir) >= PATH_MAX - 32))
		return errf(err, errlen, -EINVAL,
		            "the snapshot directory must be an absolute path");
	int r = vm_pause(vm);
	if (r < 0)
		return errf(err, errlen, r, "the VM is not running");
	int64_t t0 = mono_ms();
	struct sf_writer w;
	sf_writer_init(&w);
	struct snap_conf *conf = calloc(1, sizeof(*conf));
	struct x86_vcpu_state *cs = calloc(1, sizeof(*cs));
	uint32_t *msrs = NULL, nmsrs = 0;
	int dirfd = -1;
	bool made_dir = false, disks_moved = false;
	if (!conf || !cs) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	/* Guest RAM (secrets included) goes in here: the user's alone. */
	if (given_dirfd >= 0) {
		dirfd = fcntl(given_dirfd, F_DUPFD_CLOEXEC, 0);
	} else if (mkdir(dir, 0700) < 0) {
		r = errf(err, errlen, -errno, "cannot create snapshot directory '%s': %s", dir,
		         errno == EEXIST ? "it already exists" : strerror(errno));
		goto out;
	} else {
		made_dir = true;
		dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (dirfd < 0) {
		r = errf(err, errlen, -errno, "cannot open '%s': %s", dir, strerror(errno));
		goto out;
	}

	/* KVM state, with every vCPU parked. */
	struct x86_vm_state vmst;
	r = x86_vm_state_save(vm->vm_fd, &vmst);
	if (r < 0) {
		errf(err, errlen, r, "cannot save the irqchip/PIT/clock: %s", strerror(-r));
		goto out;
	}
	sf_add(&w, TAG_VMST, 0, &vmst, sizeof(vmst));
	r = x86_saved_msr_list(vm->kvm_fd, vm->vcpus[0].fd, &msrs, &nmsrs);
	if (r < 0) {
		errf(err, errlen, r, "cannot list MSRs: %s", strerror(-r));
		goto out;
	}
	for (unsigned int i = 0; i < vm->ncpus; i++) {
		const char *what = "";
		r = x86_vcpu_state_save(vm->vcpus[i].fd, msrs, nmsrs, cs, &what);
		if (r < 0) {
			errf(err, errlen, r, "cannot save vCPU %u (%s): %s", i, what, strerror(-r));
			goto out;
		}
		sf_add(&w, TAG_VCPU, i, cs, sizeof(*cs));
	}

	/* Devices. */
	struct serial_state ss;
	pthread_mutex_lock(&vm->serial.lock);
	ss = vm->serial.s;
	pthread_mutex_unlock(&vm->serial.lock);
	sf_add(&w, TAG_SERI, 0, &ss, sizeof(ss));
	struct i8042_state ks;
	pthread_mutex_lock(&vm->i8042.lock);
	ks = vm->i8042.s;
	pthread_mutex_unlock(&vm->i8042.lock);
	sf_add(&w, TAG_KBDC, 0, &ks, sizeof(ks));
	r = save_devices(vm, &w);
	if (r < 0) {
		errf(err, errlen, r, "out of memory");
		goto out;
	}

	/* Memory. */
	r = write_memory(vm, dirfd, &res->memory_disk_bytes);
	if (r < 0) {
		errf(err, errlen, r, "cannot write the memory file: %s", strerror(-r));
		goto out;
	}
	res->memory_bytes = vm->mem.ram_size;

	/* Configuration and disks; the disks last, as they are the one step
	 * that changes something outside the snapshot directory. */
	conf->cpus = vm->ncpus;
	conf->memory_bytes = vm->mem.ram_size;
	conf->ndisks = vm->ndisks;
	conf->has_vsock = vm_device_find(vm, "vsock", 0) != NULL;
	conf->vsock_cid = vm->vsock_cid;
	conf->ndevices = vm->ndevs;
	r = save_disks(vm, dir, given_dirfd >= 0 ? dirfd : -1, resume, conf, &disks_moved, err,
	               errlen);
	if (r < 0)
		goto out;
	sf_add(&w, TAG_CONF, 0, conf, sizeof(*conf));
	r = sf_write_file(&w, dirfd, SNAPSHOT_STATE_FILE);
	if (r < 0) {
		errf(err, errlen, r, "cannot write the state file: %s", strerror(-r));
		goto out;
	}
	(void)fsync(dirfd);
	res->state_bytes = w.len;
	res->ms = (uint64_t)(mono_ms() - t0);
out:
	if (r < 0 && made_dir && !disks_moved) {
		if (dirfd >= 0)
			close(dirfd);
		dirfd = -1;
		remove_dir(dir);
	}
	if (dirfd >= 0)
		close(dirfd);
	sf_writer_free(&w);
	free(msrs);
	free(cs);
	free(conf);
	if (resume && vm_resume(vm) < 0 && r == 0)
		r = errf(err, errlen, -EINVAL, "the VM stopped during the snapshot");
	return r;
}
