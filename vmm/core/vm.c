#include "core/vm.h"

#include "core/vcpu.h"
#include "core/vm_devices.h"
#include "errf.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "arch/x86_64/boot.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/layout.h"
#include "arch/x86_64/loader.h"
#include "arch/x86_64/state.h"
#include "base/kvm_stats.h"
#include "cove_limits.h"
#include "kvm_caps.h"

/* A read-only mapping of a whole file (kernel, initrd). */
struct mapped_file {
	const uint8_t *data;
	size_t len;
};

static int map_file(const char *path, const char *what, struct mapped_file *f, char *err,
                    size_t errlen)
{
	f->data = NULL;
	f->len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "cannot open %s '%s': %s", what, path,
		            strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return errf(err, errlen, -EINVAL, "%s '%s' is not a non-empty regular file", what,
		            path);
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	int e = errno;
	close(fd);
	if (p == MAP_FAILED)
		return errf(err, errlen, -e, "cannot map %s '%s': %s", what, path, strerror(e));
	f->data = p;
	f->len = (size_t)st.st_size;
	return 0;
}

static void unmap_file(struct mapped_file *f)
{
	if (f->data)
		munmap((void *)f->data, f->len);
	f->data = NULL;
}

static int check_config(const struct vm_config *cfg, char *err, size_t errlen)
{
	if (!cfg->kernel)
		return errf(err, errlen, -EINVAL, "no kernel given (--kernel PATH)");
	if (cfg->cpus < 1 || cfg->cpus > VM_MAX_VCPUS)
		return errf(err, errlen, -EINVAL, "cpus must be between 1 and %d, got %u",
		            VM_MAX_VCPUS, cfg->cpus);
	if (cfg->memory_mib < COVE_MEMORY_MIN_MIB)
		return errf(err, errlen, -EINVAL, "memory must be at least %d MiB, got %llu",
		            COVE_MEMORY_MIN_MIB, (unsigned long long)cfg->memory_mib);
	if (cfg->memory_mib > (1ULL << 20))
		return errf(err, errlen, -EINVAL, "memory of %llu MiB is more than 1 TiB",
		            (unsigned long long)cfg->memory_mib);
	if (cfg->ndisks > VM_MAX_DISKS)
		return errf(err, errlen, -EINVAL, "at most %d disks", VM_MAX_DISKS);
	return 0;
}

/* Cove's default command line, then the devices, then the user's part. */
static int build_cmdline(struct vm *vm, const struct vm_config *cfg, char *buf, size_t len,
                         char *err, size_t errlen)
{
	/* no_timer_check: the IO-APIC timer check waits for PIT ticks, and
	 * KVM's timer is known good; lpj is not needed (the delay loop is
	 * calibrated from kvm-clock's TSC frequency, no loop).  The console
	 * stays on ttyS0: with the caller's `quiet` the kernel writes only
	 * warnings there, and a panic must be seen. */
	int n = snprintf(buf, len,
	                 "console=ttyS0 reboot=k panic=1 8250.nr_uarts=1 i8042.noaux i8042.nomux "
	                 "i8042.nopnp i8042.dumbkbd no_timer_check");
	if (cfg->ndisks > 0)
		n += snprintf(buf + n, len - (size_t)n, " root=/dev/vda %s",
		              cfg->disks[0].read_only ? "ro" : "rw");
	for (unsigned int i = 0; i < vm_devices_count(vm, cfg) && (size_t)n < len; i++)
		n += vm_devices_cmdline(vm, i, buf + n, len - (size_t)n);
	if (cfg->cmdline && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " %s", cfg->cmdline);
	if ((size_t)n >= len)
		return errf(err, errlen, -E2BIG, "kernel command line is longer than %zu bytes",
		            len - 1);
	return 0;
}

static int kvm_open(struct vm *vm, char *err, size_t errlen)
{
	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0)
		return errf(err, errlen, -errno,
		            "cannot open /dev/kvm: %s (no KVM here? see scripts/kvm-host)",
		            strerror(errno));
	if (ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		return errf(err, errlen, -ENOTSUP, "unsupported KVM API version");
	for (size_t i = 0; i < KVM_REQUIRED_CAPS_N; i++)
		if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, kvm_required_caps[i].cap) <= 0)
			return errf(err, errlen, -ENOTSUP, "KVM lacks %s",
			            kvm_required_caps[i].name);
	int run_size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (run_size < (int)sizeof(struct kvm_run))
		return errf(err, errlen, -EIO, "KVM_GET_VCPU_MMAP_SIZE failed");
	vm->run_size = (size_t)run_size;
	vm->cpuid = x86_supported_cpuid(vm->kvm_fd);
	if (!vm->cpuid)
		return errf(err, errlen, -EIO, "KVM_GET_SUPPORTED_CPUID failed");
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0)
		return errf(err, errlen, -errno, "KVM_CREATE_VM: %s", strerror(errno));
	return 0;
}

static int map_memory(struct vm *vm, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < vm->mem.nregions; i++) {
		const struct gmem_region *r = &vm->mem.regions[i];
		struct kvm_userspace_memory_region region = {
			.slot = i,
			.guest_phys_addr = r->gpa,
			.memory_size = r->size,
			.userspace_addr = (uint64_t)(uintptr_t)r->host,
		};
		if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
			return errf(err, errlen, -errno, "KVM_SET_USER_MEMORY_REGION: %s",
			            strerror(errno));
	}
	return 0;
}

/* The vCPUs, bare: their registers come from the source (vm_build). */
static int create_vcpus(struct vm *vm, char *err, size_t errlen)
{
	for (unsigned int i = 0; i < vm->ncpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		v->vm = vm;
		v->index = i;
		v->fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, (unsigned long)i);
		if (v->fd < 0)
			return errf(err, errlen, -errno, "KVM_CREATE_VCPU %u: %s", i,
			            strerror(errno));
		void *run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
		if (run == MAP_FAILED)
			return errf(err, errlen, -errno, "mmap of vCPU %u: %s", i, strerror(errno));
		v->run = run;
		v->stats_fd = kvm_stats_open(v->fd); /* optional: -ENOTSUP on old kernels */
	}
	return 0;
}

static void on_signal(void *opaque, uint32_t events)
{
	struct vm *vm = opaque;
	struct signalfd_siginfo si;
	(void)events;
	if (read(vm->signal_fd, &si, sizeof(si)) != sizeof(si))
		return;
	char detail[64];
	snprintf(detail, sizeof(detail), "stopped by signal %u (%s)", si.ssi_signo,
	         strsignal((int)si.ssi_signo));
	vm_request_stop(vm, VM_EXIT_SIGNAL, detail);
}

/* The --ttl deadline passed: stop the VM whatever the guest is doing
 * (vm_request_stop kicks every vCPU out of KVM_RUN). */
static void on_deadline(void *opaque, uint32_t events)
{
	struct vm *vm = opaque;
	uint64_t n;
	(void)events;
	/* #syscalls: read (I/O thread, the ttl timerfd) */
	if (read(vm->ttl_fd, &n, sizeof(n)) != sizeof(n))
		return;
	char detail[96];
	snprintf(detail, sizeof(detail), "the sandbox reached its --ttl of %llu s",
	         (unsigned long long)vm->ttl_s);
	vm_request_stop(vm, VM_EXIT_DEADLINE, detail);
}

/* A timerfd on the I/O loop, armed by vm_start(): the deadline counts from
 * the start, not from the build (a restore's loading does not eat it). */
static int watch_deadline(struct vm *vm, const struct vm_config *cfg, char *err, size_t errlen)
{
	if (!cfg->ttl_s)
		return 0;
	vm->ttl_s = cfg->ttl_s;
	/* #syscalls: timerfd_create (main thread, at setup) */
	vm->ttl_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (vm->ttl_fd < 0 || evloop_add(&vm->loop, vm->ttl_fd, EPOLLIN, on_deadline, vm) < 0)
		return errf(err, errlen, -errno, "cannot set up the --ttl timer: %s",
		            strerror(errno));
	return 0;
}

static int arm_deadline(struct vm *vm)
{
	if (vm->ttl_fd < 0)
		return 0;
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)vm->ttl_s } };
	/* #syscalls: timerfd_settime (main thread, in vm_start) */
	return timerfd_settime(vm->ttl_fd, 0, &its, NULL) < 0 ? -errno : 0;
}

static int watch_signals(struct vm *vm, char *err, size_t errlen)
{
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	vm->signal_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	if (vm->signal_fd < 0 || evloop_add(&vm->loop, vm->signal_fd, EPOLLIN, on_signal, vm) < 0)
		return errf(err, errlen, -errno, "cannot watch signals");
	return 0;
}

static struct vm *vm_alloc(const struct vm_config *cfg)
{
	struct vm *vm = calloc(1, sizeof(*vm));
	if (!vm)
		return NULL;
	vm->kvm_fd = vm->vm_fd = vm->serial_irqfd = vm->signal_fd = -1;
	vm->ttl_fd = vm->console_flush_fd = vm->root_fd = -1;
	vm->console_in_fd = vm->console_out_fd = -1;
	vm->mem.fd = -1;
	vm->loop.epfd = vm->loop.stop_fd = -1;
	vm->ncpus = cfg->cpus;
	for (unsigned int i = 0; i < VM_MAX_VCPUS; i++)
		vm->vcpus[i].fd = vm->vcpus[i].stats_fd = -1;
	pthread_mutex_init(&vm->lock, NULL);
	pthread_cond_init(&vm->cond, NULL);
	vm->state = VM_CREATED;
	return vm;
}

int vm_prepare(struct vm **out, unsigned int cpus, char *err, size_t errlen)
{
	*out = NULL;
	if (cpus < 1 || cpus > VM_MAX_VCPUS)
		return errf(err, errlen, -EINVAL, "cpus must be between 1 and %d, got %u",
		            VM_MAX_VCPUS, cpus);
	const struct vm_config cfg = { .cpus = cpus };
	struct vm *vm = vm_alloc(&cfg);
	if (!vm)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = kvm_open(vm, err, errlen);
	if (r == 0 && (r = x86_vm_setup(vm->vm_fd)) < 0)
		errf(err, errlen, r, "setting up the VM (irqchip, PIT): %s", strerror(-r));
	if (r == 0)
		r = create_vcpus(vm, err, errlen);
	if (r == 0 && (r = evloop_init(&vm->loop)) < 0)
		errf(err, errlen, r, "cannot create the I/O loop: %s", strerror(-r));
	if (r == 0)
		r = watch_signals(vm, err, errlen);
	if (r < 0) {
		vm_destroy(vm);
		return r;
	}
	vm->prepared = true;
	*out = vm;
	return 0;
}

int vm_build(struct vm **out, const struct vm_config *cfg, const struct vm_source *src, char *err,
             size_t errlen)
{
	*out = NULL;
	struct vm *vm = cfg->prepared;
	bool prepared = vm != NULL;
	if (prepared && (!vm->prepared || vm->ncpus != cfg->cpus)) {
		int r = errf(err, errlen, -EINVAL,
		             "this pooled cove-vmm has %u vCPUs, the sandbox needs %u", vm->ncpus,
		             cfg->cpus);
		vm_destroy(vm);
		return r;
	}
	if (!prepared)
		vm = vm_alloc(cfg);
	if (!vm)
		return errf(err, errlen, -ENOMEM, "out of memory");
	vm->prepared = false;
	/* 1. What the user gave us is checked before KVM is touched. */
	int r = vm_devices_open_disks(vm, cfg, err, errlen);
	if (r < 0 || (src->before_kvm && (r = src->before_kvm(vm, src->ctx, err, errlen)) < 0))
		goto fail;
	boot_phase("disks_opened");
	/* 2. The KVM VM, its memory and vCPUs (a prepared VM has the KVM VM
	 * and bare vCPUs already: memory slots may follow vCPUs). */
	if ((!prepared && (r = kvm_open(vm, err, errlen)) < 0) ||
	    (src->after_kvm && (r = src->after_kvm(vm, src->ctx, err, errlen)) < 0))
		goto fail;
	boot_phase("kvm_and_source");
	if (!prepared && (r = x86_vm_setup(vm->vm_fd)) < 0) {
		errf(err, errlen, r, "setting up the VM (irqchip, PIT): %s", strerror(-r));
		goto fail;
	}
	if ((r = map_memory(vm, err, errlen)) < 0 ||
	    (!prepared && (r = create_vcpus(vm, err, errlen)) < 0) ||
	    (r = src->vcpus(vm, src->ctx, err, errlen)) < 0)
		goto fail;
	boot_phase("memory_and_vcpus");
	/* 3. The I/O loop and devices. */
	if (!prepared && (r = evloop_init(&vm->loop)) < 0) {
		errf(err, errlen, r, "cannot create the I/O loop: %s", strerror(-r));
		goto fail;
	}
	if ((r = vm_devices_create(vm, cfg, err, errlen)) < 0 ||
	    (src->devices && (r = src->devices(vm, src->ctx, err, errlen)) < 0) ||
	    (!prepared && (r = watch_signals(vm, err, errlen)) < 0) ||
	    (r = watch_deadline(vm, cfg, err, errlen)) < 0)
		goto fail;
	vm->t_created_us = boot_timer_now_us();
	boot_phase("devices");
	*out = vm;
	return 0;
fail:
	vm_destroy(vm);
	return r;
}

/* A cold boot as a vm_source: the kernel and initrd are mapped, loaded and
 * described to the guest before KVM is opened. */
struct boot_source {
	const struct vm_config *cfg;
	struct mapped_file kernel, initrd;
	struct x86_kernel k;
};

static int boot_load(struct vm *vm, void *ctx, char *err, size_t errlen)
{
	struct boot_source *b = ctx;
	const struct vm_config *cfg = b->cfg;
	char cmdline[X86_CMDLINE_MAX];
	int r = map_file(cfg->kernel, "kernel", &b->kernel, err, errlen);
	if (r < 0)
		return r;
	if (cfg->initrd && (r = map_file(cfg->initrd, "initrd", &b->initrd, err, errlen)) < 0)
		return r;
	r = gmem_create(&vm->mem, cfg->memory_mib << 20, X86_MMIO_HOLE);
	if (r < 0)
		return errf(err, errlen, r, "cannot create %llu MiB of guest memory: %s",
		            (unsigned long long)cfg->memory_mib, strerror(-r));
	r = x86_load_kernel(&vm->mem, b->kernel.data, b->kernel.len, &b->k, err, errlen);
	if (r < 0)
		return r;
	struct x86_boot_cfg boot = { .ncpus = vm->ncpus };
	if (b->initrd.data) {
		r = x86_place_initrd(&vm->mem, &b->k, b->initrd.len, &boot.initrd_gpa);
		if (r < 0)
			return errf(err, errlen, r,
			            "initrd of %zu bytes does not fit in guest memory",
			            b->initrd.len);
		boot.initrd_size = b->initrd.len;
		r = gmem_write(&vm->mem, boot.initrd_gpa, b->initrd.data, b->initrd.len);
		if (r < 0)
			return r;
	}
	if ((r = build_cmdline(vm, cfg, cmdline, sizeof(cmdline), err, errlen)) < 0)
		return r;
	boot.cmdline = cmdline;
	if ((r = x86_setup_boot(&vm->mem, &b->k, &boot, err, errlen)) < 0)
		return r;
	r = x86_write_page_tables(&vm->mem);
	return r < 0 ? errf(err, errlen, r, "cannot write boot page tables") : 0;
}

static int boot_vcpus(struct vm *vm, void *ctx, char *err, size_t errlen)
{
	struct boot_source *b = ctx;
	for (unsigned int i = 0; i < vm->ncpus; i++) {
		int r = x86_vcpu_setup(vm->vcpus[i].fd, vm->cpuid, i, vm->ncpus, &b->k);
		if (r < 0)
			return errf(err, errlen, r, "setting up vCPU %u: %s", i, strerror(-r));
	}
	return 0;
}

int vm_create(struct vm **out, const struct vm_config *cfg, char *err, size_t errlen)
{
	*out = NULL;
	int r = check_config(cfg, err, errlen);
	if (r < 0) {
		vm_destroy(cfg->prepared); /* taken over, as vm_build would */
		return r;
	}
	struct boot_source b = { .cfg = cfg };
	const struct vm_source src = {
		.ctx = &b,
		.before_kvm = boot_load,
		.vcpus = boot_vcpus,
	};
	r = vm_build(out, cfg, &src, err, errlen);
	unmap_file(&b.kernel);
	unmap_file(&b.initrd);
	return r;
}

int vm_start(struct vm *vm)
{
	/* Signals for stopping go to the signalfd; the kick signal only to
	 * vCPU threads (they unblock it).  Threads inherit this mask. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, VCPU_KICK_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	int r = vcpu_install_kick_handler();
	if (r < 0)
		return r;
	r = arm_deadline(vm);
	if (r < 0)
		return r;
	r = evloop_start(&vm->loop);
	if (r < 0)
		return r;
	pthread_mutex_lock(&vm->lock);
	vm->state = VM_RUNNING;
	pthread_mutex_unlock(&vm->lock);
	for (unsigned int i = 0; i < vm->ncpus; i++) {
		r = vcpu_start(&vm->vcpus[i]);
		if (r < 0) {
			vm_request_stop(vm, VM_EXIT_INTERNAL, "cannot start a vCPU thread");
			return r;
		}
	}
	return 0;
}

enum vm_exit_reason vm_wait(struct vm *vm)
{
	pthread_mutex_lock(&vm->lock);
	while (!vm->stop_requested)
		pthread_cond_wait(&vm->cond, &vm->lock);
	pthread_mutex_unlock(&vm->lock);
	for (unsigned int i = 0; i < vm->ncpus; i++) {
		if (vm->vcpus[i].thread_started) {
			pthread_join(vm->vcpus[i].thread, NULL);
			vm->vcpus[i].thread_started = false;
		}
	}
	pthread_mutex_lock(&vm->lock);
	vm->state = VM_STOPPED;
	enum vm_exit_reason reason = vm->exit_reason;
	pthread_mutex_unlock(&vm->lock);
	return reason;
}

void vm_destroy(struct vm *vm)
{
	if (!vm)
		return;
	bool started = false;
	for (unsigned int i = 0; i < vm->ncpus; i++)
		started |= vm->vcpus[i].thread_started;
	if (started) {
		vm_request_stop(vm, VM_EXIT_SIGNAL, "destroyed");
		(void)vm_wait(vm);
	}
	if (vm->root_fd >= 0)
		close(vm->root_fd);
	/* Devices release their loop watches and KVM bindings with the loop
	 * stopped but its epoll set still open. */
	if (vm->loop.epfd >= 0)
		evloop_stop(&vm->loop);
	vm_devices_destroy(vm);
	if (vm->loop.epfd >= 0)
		evloop_destroy(&vm->loop);
	if (vm->signal_fd >= 0)
		close(vm->signal_fd);
	if (vm->ttl_fd >= 0)
		close(vm->ttl_fd);
	for (unsigned int i = 0; i < vm->ncpus; i++) {
		if (vm->vcpus[i].run)
			munmap(vm->vcpus[i].run, vm->run_size);
		if (vm->vcpus[i].fd >= 0)
			close(vm->vcpus[i].fd);
		if (vm->vcpus[i].stats_fd >= 0)
			close(vm->vcpus[i].stats_fd);
	}
	free(vm->cpuid);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	gmem_destroy(&vm->mem);
	pthread_cond_destroy(&vm->cond);
	pthread_mutex_destroy(&vm->lock);
	free(vm);
}

int vm_exit_status(enum vm_exit_reason reason)
{
	switch (reason) {
	case VM_EXIT_RESET:
		return 0;
	case VM_EXIT_PANIC:
		return 2;
	case VM_EXIT_TRIPLE_FAULT:
		return 3;
	case VM_EXIT_SIGNAL:
		return 4;
	case VM_EXIT_DEADLINE:
		return 6;
	case VM_EXIT_INTERNAL:
	case VM_EXIT_NONE:
	default:
		return 5;
	}
}

const char *vm_exit_reason_name(enum vm_exit_reason reason)
{
	switch (reason) {
	case VM_EXIT_RESET:
		return "guest reset";
	case VM_EXIT_PANIC:
		return "guest kernel panic";
	case VM_EXIT_TRIPLE_FAULT:
		return "guest triple fault";
	case VM_EXIT_SIGNAL:
		return "stopped by the host";
	case VM_EXIT_DEADLINE:
		return "deadline";
	case VM_EXIT_INTERNAL:
		return "internal error";
	case VM_EXIT_NONE:
	default:
		return "no reason";
	}
}
