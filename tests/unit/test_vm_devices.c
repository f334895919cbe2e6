/* Unit tests: the VM's device set without KVM (vm_fd -1), for who closes
 * each disk.  vm_devices_open_disks() opens them, vm_devices_create()
 * hands them to virtio-blk, and vm_devices_destroy() must close every one
 * exactly once: the one a device holds (after a snapshot's swap, the fresh
 * one), or the one no device took (a start that failed in between).  A
 * disk left open keeps its exclusive lock and descriptors (reopening it
 * gives -EBUSY) and its memory (LeakSanitizer fails the test at exit:
 * these tests run under ASan). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/disk_open.h"
#include "core/vm_devices.h"

#include "qcow2_create.h"
#include "unit.h"
#include "virtio/blk.h"

#define BASE_SIZE (4 << 20)

struct fixture {
	char dir[64];
	char raw[96], base[96], top[96];
	struct vm_config cfg;
};

/* The fields vm_alloc() (core/vm.c) sets; no KVM VM, no guest memory. */
static struct vm *bare_vm(void)
{
	struct vm *vm = calloc(1, sizeof(*vm));
	ck_assert_ptr_nonnull(vm);
	vm->kvm_fd = vm->vm_fd = vm->serial_irqfd = vm->signal_fd = -1;
	vm->ttl_fd = vm->console_flush_fd = vm->root_fd = -1;
	vm->console_in_fd = vm->console_out_fd = -1;
	vm->mem.fd = -1;
	vm->loop.epfd = vm->loop.stop_fd = -1;
	ck_assert_int_eq(evloop_init(&vm->loop), 0);
	return vm;
}

static void free_vm(struct vm *vm)
{
	evloop_destroy(&vm->loop);
	free(vm);
}

static void make_file(const char *path, off_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, size), 0);
	close(fd);
}

/* A raw disk and a qcow2 overlay over a raw base: both writable. */
static void setup(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/cove-vmdev-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
	snprintf(f->raw, sizeof(f->raw), "%s/raw.img", f->dir);
	snprintf(f->base, sizeof(f->base), "%s/base.img", f->dir);
	snprintf(f->top, sizeof(f->top), "%s/top.qcow2", f->dir);
	make_file(f->raw, BASE_SIZE);
	make_file(f->base, BASE_SIZE);
	char err[256];
	ck_assert_int_eq(qcow2_create_overlay_format(f->top, f->base, "raw", 0, err, sizeof(err)),
	                 0);
	f->cfg.console = VM_CONSOLE_NONE;
	f->cfg.ndisks = 2;
	f->cfg.disks[0] = (struct vm_disk_config){ .path = f->top, .format = "qcow2" };
	f->cfg.disks[1] = (struct vm_disk_config){ .path = f->raw, .format = "raw" };
}

static void teardown(struct fixture *f)
{
	unlink(f->top);
	unlink(f->base);
	unlink(f->raw);
	rmdir(f->dir);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	int n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Each writable disk can be opened (locked) again: no one holds it. */
static void assert_closed(const struct fixture *f)
{
	const char *paths[] = { f->top, f->raw };
	const char *formats[] = { "qcow2", "raw" };
	for (int i = 0; i < 2; i++) {
		struct disk *d = NULL;
		char msg[256] = "";
		int r = disk_open_format(paths[i], formats[i], false, &d, msg, sizeof(msg));
		ck_assert_msg(r == 0, "reopening %s: %d (%s)", paths[i], r, msg);
		disk_close(d);
	}
}

START_TEST(destroy_closes_the_disks_the_devices_hold)
{
	struct fixture f;
	setup(&f);
	int fds = count_fds();
	struct vm *vm = bare_vm();
	char err[256] = "";
	ck_assert_int_eq(vm_devices_open_disks(vm, &f.cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(vm_devices_create(vm, &f.cfg, err, sizeof(err)), 0);
	ck_assert_uint_eq(vm->ndisks, 2);
	ck_assert_ptr_nonnull(vblk_disk(vm_disk(vm, 0)));
	/* While the VM holds them, a second writer is refused. */
	struct disk *d = NULL;
	ck_assert_int_eq(disk_open_format(f.top, "qcow2", false, &d, err, sizeof(err)), -EBUSY);
	vm_devices_destroy(vm);
	free_vm(vm);
	ck_assert_int_eq(count_fds(), fds);
	assert_closed(&f);
	teardown(&f);
}
END_TEST

/* A snapshot swaps a fresh disk into the device: that one is closed, and
 * the one swapped out was the swapper's to close. */
START_TEST(destroy_closes_a_swapped_in_disk)
{
	struct fixture f;
	setup(&f);
	int fds = count_fds();
	struct vm *vm = bare_vm();
	char err[256] = "";
	ck_assert_int_eq(vm_devices_open_disks(vm, &f.cfg, err, sizeof(err)), 0);
	ck_assert_int_eq(vm_devices_create(vm, &f.cfg, err, sizeof(err)), 0);
	disk_close(vblk_swap_disk(vm_disk(vm, 1), NULL));
	struct disk *fresh = NULL;
	ck_assert_int_eq(disk_open_format(f.raw, "raw", false, &fresh, err, sizeof(err)), 0);
	ck_assert_ptr_null(vblk_swap_disk(vm_disk(vm, 1), fresh));
	vm_devices_destroy(vm);
	free_vm(vm);
	ck_assert_int_eq(count_fds(), fds);
	assert_closed(&f);
	teardown(&f);
}
END_TEST

/* A start that fails after the disks were opened, before any device took
 * them (vm_build's later steps): destroy closes them where they are. */
START_TEST(destroy_closes_disks_no_device_took)
{
	struct fixture f;
	setup(&f);
	int fds = count_fds();
	struct vm *vm = bare_vm();
	char err[256] = "";
	ck_assert_int_eq(vm_devices_open_disks(vm, &f.cfg, err, sizeof(err)), 0);
	vm_devices_destroy(vm);
	free_vm(vm);
	ck_assert_int_eq(count_fds(), fds);
	assert_closed(&f);
	teardown(&f);
}
END_TEST

/* The second disk cannot be opened: the first is closed on the way out. */
START_TEST(a_failed_open_closes_the_disks_before_it)
{
	struct fixture f;
	setup(&f);
	f.cfg.disks[1].path = "/nonexistent/disk.img";
	int fds = count_fds();
	struct vm *vm = bare_vm();
	char err[256] = "";
	ck_assert_int_lt(vm_devices_open_disks(vm, &f.cfg, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "nonexistent"));
	vm_devices_destroy(vm);
	free_vm(vm);
	ck_assert_int_eq(count_fds(), fds);
	assert_closed(&f);
	teardown(&f);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("vm_devices");
	TCase *tc = tcase_create("disk ownership");
	tcase_add_test(tc, destroy_closes_the_disks_the_devices_hold);
	tcase_add_test(tc, destroy_closes_a_swapped_in_disk);
	tcase_add_test(tc, destroy_closes_disks_no_device_took);
	tcase_add_test(tc, a_failed_open_closes_the_disks_before_it);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
