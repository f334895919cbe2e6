/* boot_smoke: boots a real arm64 Linux Image on /dev/kvm with the pieces of
 * vmm/arch/arm64 (image.c places the Image, the device tree comes from
 * fdt.c through tests/arm64/mkdtb, vcpu.c and gic.c set up the vCPUs and
 * the vGIC), as cove-vmm will once they are wired.  Static aarch64, built
 * by `make ARCH=arm64`; run in the emulated arm64 host by smoke.sh.
 *
 * Usage: boot_smoke IMAGE DTB RAM_MIB NCPUS DEADLINE_S [INITRD].  The DTB
 * must have been made (mkdtb) for the same RAM_MIB, NCPUS, Image and
 * initrd: the initrd goes where arm64_initrd_addr() puts it.  The guest's ns16550a console
 * (a minimal model here: transmit, line status, scratch registers) goes to
 * stdout; every other MMIO access is ignored (reads 0).  It ends at the
 * guest's first PSCI SYSTEM_OFF or SYSTEM_RESET (exit 0, with a line
 * naming it) or at the deadline (exit 1).  Which lines the console must
 * show is smoke.sh's to check. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "arch/arm64/gic.h"
#include "arch/arm64/image.h"
#include "arch/arm64/vcpu.h"
#include "smoke_vm.h"

#define MAX_CPUS 8

struct vcpu {
	int fd;
	struct kvm_run *run;
	pthread_t thread;
};

static struct vcpu vcpus[MAX_CPUS];
static unsigned int ncpus;
static atomic_int stop;        /* set once: the guest asked, or the deadline */
static atomic_uint event_type; /* KVM_SYSTEM_EVENT_* of the first event */
static pthread_mutex_t uart_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t uart_regs[8];

static int fail(const char *what, int err)
{
	fprintf(stderr, "boot_smoke: %s: %s\n", what, err ? strerror(err) : "unexpected");
	return 1;
}

/* The ns16550a's registers, one byte apart: THR/RBR 0, IER 1, IIR 2, LCR 3,
 * MCR 4, LSR 5, MSR 6, SCR 7; with LCR's DLAB set, 0 and 1 are the
 * divisor (kept, not printed). */
static void uart_access(uint64_t off, uint8_t *data, int is_write)
{
	pthread_mutex_lock(&uart_lock);
	if (is_write) {
		if (off == 0 && !(uart_regs[3] & 0x80)) {
			ssize_t w = write(STDOUT_FILENO, data, 1);
			(void)w;
		} else if (off < 8) {
			uart_regs[off] = data[0];
		}
	} else {
		switch (off) {
		case 0:
			data[0] = 0;
			break;
		case 2:
			data[0] = 0x01; /* no interrupt pending */
			break;
		case 5:
			data[0] = 0x60; /* transmitter empty */
			break;
		case 6:
			data[0] = 0xb0; /* DCD, DSR, CTS */
			break;
		default:
			data[0] = off < 8 ? uart_regs[off] : 0;
		}
	}
	pthread_mutex_unlock(&uart_lock);
}

static void stop_all(void)
{
	atomic_store(&stop, 1);
	for (unsigned int i = 0; i < ncpus; i++) {
		vcpus[i].run->immediate_exit = 1;
		pthread_kill(vcpus[i].thread, SIGUSR1);
	}
}

static void *vcpu_loop(void *arg)
{
	struct vcpu *v = arg;
	while (!atomic_load(&stop)) {
		if (ioctl(v->fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			fail("KVM_RUN", errno);
			break;
		}
		struct kvm_run *r = v->run;
		if (r->exit_reason == KVM_EXIT_MMIO) {
			uint64_t a = r->mmio.phys_addr;
			if (a >= ARM64_UART_BASE && a < ARM64_UART_BASE + ARM64_UART_SIZE &&
			    r->mmio.len == 1)
				uart_access(a - ARM64_UART_BASE, r->mmio.data, r->mmio.is_write);
			else if (!r->mmio.is_write)
				memset(r->mmio.data, 0, sizeof(r->mmio.data));
			continue;
		}
		if (r->exit_reason == KVM_EXIT_SYSTEM_EVENT) {
			unsigned int none = 0;
			atomic_compare_exchange_strong(&event_type, &none, r->system_event.type);
			break;
		}
		fprintf(stderr, "boot_smoke: vCPU exit reason %u\n", r->exit_reason);
		break;
	}
	stop_all();
	return NULL;
}

/* read_file() - all of @path into @dst (at most @max bytes); its size or -errno. */
static long read_file(const char *path, void *dst, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > max) {
		close(fd);
		return -EFBIG;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, (uint8_t *)dst + got, (size_t)st.st_size - got);
		if (n <= 0) {
			close(fd);
			return n < 0 ? -errno : -EIO;
		}
		got += (size_t)n;
	}
	close(fd);
	return (long)got;
}

int main(int argc, char **argv)
{
	if (argc != 6 && argc != 7)
		return fail("usage: boot_smoke IMAGE DTB RAM_MIB NCPUS DEADLINE_S [INITRD]", 0);
	uint64_t ram_size = strtoull(argv[3], NULL, 10) << 20;
	ncpus = (unsigned int)strtoul(argv[4], NULL, 10);
	unsigned int deadline = (unsigned int)strtoul(argv[5], NULL, 10);
	if (ram_size < (16ULL << 20) || ram_size > (4ULL << 30) || ncpus == 0 || ncpus > MAX_CPUS ||
	    deadline == 0)
		return fail("RAM_MIB 16..4096, NCPUS 1..8, DEADLINE_S > 0", 0);
	smoke_signals();
	struct smoke_vm v;
	const char *step = smoke_vm_create(&v, ram_size);
	if (step)
		return fail(step, errno);
	uint8_t *ram = v.ram;
	/* The Image straight into RAM at its load address, once placed. */
	uint8_t hdr[ARM64_IMAGE_HDR_SIZE];
	long n = read_file(argv[1], ram, ram_size);
	if (n < 0)
		return fail(argv[1], (int)-n);
	memcpy(hdr, ram, sizeof(hdr));
	struct arm64_image im;
	int err = arm64_image_parse(hdr, sizeof(hdr), (uint64_t)n, ram_size, &im);
	if (err)
		return fail("arm64_image_parse", -err);
	memmove(ram + (im.load_addr - ARM64_RAM_BASE), ram, (size_t)n);
	if (im.load_addr != ARM64_RAM_BASE)
		memset(ram, 0, im.load_addr - ARM64_RAM_BASE);
	uint64_t fdt = arm64_fdt_addr(ram_size);
	long dn = read_file(argv[2], ram + (fdt - ARM64_RAM_BASE), ARM64_FDT_MAX);
	if (dn < 0)
		return fail(argv[2], (int)-dn);
	if (argc == 7) {
		struct stat st;
		uint64_t at = stat(argv[6], &st)
		                  ? 0
		                  : arm64_initrd_addr(ram_size, im.end, (uint64_t)st.st_size);
		if (!at)
			return fail("the initrd does not fit", 0);
		long rn = read_file(argv[6], ram + (at - ARM64_RAM_BASE), fdt - at);
		if (rn < 0)
			return fail(argv[6], (int)-rn);
		printf("boot_smoke: initrd %ld bytes at 0x%llx\n", rn, (unsigned long long)at);
	}
	printf("boot_smoke: Image %ld bytes at 0x%llx (text_offset 0x%llx, image_size 0x%llx), "
	       "device tree %ld bytes at 0x%llx, %u vCPUs\n",
	       n, (unsigned long long)im.load_addr, (unsigned long long)im.text_offset,
	       (unsigned long long)im.image_size, dn, (unsigned long long)fdt, ncpus);
	fflush(stdout);

	int vm = v.vm;
	for (unsigned int i = 0; i < ncpus; i++) {
		vcpus[i].fd = ioctl(vm, KVM_CREATE_VCPU, i);
		if (vcpus[i].fd < 0)
			return fail("KVM_CREATE_VCPU", errno);
		vcpus[i].run = smoke_vcpu_run(&v, vcpus[i].fd);
		if (!vcpus[i].run)
			return fail("mmap kvm_run", errno);
	}
	enum arm64_gic_version gv;
	int gic = arm64_gic_create(vm, ncpus, &gv);
	if (gic < 0)
		return fail("arm64_gic_create", -gic);
	for (unsigned int i = 0; i < ncpus; i++) {
		uint64_t mpidr;
		err = arm64_vcpu_init(vm, vcpus[i].fd, i, &mpidr);
		if (err)
			return fail("arm64_vcpu_init", -err);
		if (mpidr != arm64_kvm_mpidr(i))
			return fail("an MPIDR differs from the device tree's", 0);
	}
	err = arm64_gic_finalize(gic);
	if (err)
		return fail("arm64_gic_finalize", -err);
	err = arm64_vcpu_boot_regs(vcpus[0].fd, im.load_addr, fdt);
	if (err)
		return fail("arm64_vcpu_boot_regs", -err);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned int i = 0; i < ncpus; i++)
		if (pthread_create(&vcpus[i].thread, NULL, vcpu_loop, &vcpus[i]))
			return fail("pthread_create", 0);
	for (unsigned int waited = 0; !atomic_load(&stop) && waited < deadline * 10; waited++)
		usleep(100000);
	int timed_out = !atomic_load(&stop);
	if (timed_out)
		stop_all();
	for (unsigned int i = 0; i < ncpus; i++)
		pthread_join(vcpus[i].thread, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	unsigned int ev = atomic_load(&event_type);
	if (timed_out || ev == 0) {
		fprintf(stderr, "\nboot_smoke: no PSCI system event within %u s\n", deadline);
		return 1;
	}
	printf("\nboot_smoke: PSCI %s after %.1f s\n",
	       ev == KVM_SYSTEM_EVENT_RESET      ? "SYSTEM_RESET"
	       : ev == KVM_SYSTEM_EVENT_SHUTDOWN ? "SYSTEM_OFF"
	                                         : "system event",
	       s);
	return 0;
}
