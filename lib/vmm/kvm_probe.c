/* kvm_probe: boots a tiny 64-bit test guest to learn whether /dev/kvm can
 * run Cove's guest (see kvm_probe.h).  Only libc, kernel headers and the
 * few files of common/ that scripts/kvm-probe compiles with it. */
#include "lib/vmm/kvm_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "kvm_caps.h"
#include "x86_msrs.h"

/* Test guest memory: 64 KiB at GPA 0, identity-mapped with 4 KiB pages. */
#define PROBE_MEM_SIZE  0x10000
#define PROBE_GDT       0x0500
#define PROBE_PML4      0x1000
#define PROBE_PDPT      0x2000
#define PROBE_PD        0x3000
#define PROBE_PT        0x4000
#define PROBE_CODE      0x8000
#define PROBE_DATA      0x9000 /* cmpxchg16b target (16-aligned), then the rdmsr result */
#define PROBE_XSAVE     0xa000 /* XSAVE area (64-aligned, < 4 KiB for x87|SSE) */
#define PROBE_STACK     0xf000
#define PROBE_PORT      0x80 /* the guest writes its completed step count here */
#define PROBE_MAX_EXITS 64
#define PROBE_CPUID_MAX 256

#define PTE_PW           0x3ULL /* present, writable */
#define CR0_PE           (1ULL << 0)
#define CR0_MP           (1ULL << 1)
#define CR0_ET           (1ULL << 4)
#define CR0_NE           (1ULL << 5)
#define CR0_WP           (1ULL << 16)
#define CR0_PG           (1ULL << 31)
#define CR4_PAE          (1ULL << 5)
#define CR4_OSFXSR       (1ULL << 9)
#define CR4_OSXMMEX      (1ULL << 10)
#define CR4_OSXSAVE      (1ULL << 18)
#define EFER_LME         (1ULL << 8)
#define EFER_LMA         (1ULL << 10)
#define CPUID1_ECX_CX16  (1U << 13)
#define CPUID1_ECX_XSAVE (1U << 26)

#define CMPXCHG_LO 0x11111111ULL
#define CMPXCHG_HI 0x22222222ULL
#define MSR_VALUE  0x12345678U

/* What each step of the guest does; the guest reports a step done by
 * writing its number + 1 to PROBE_PORT. */
static const char *const step_names[] = {
	"entering 64-bit mode",
	"lock cmpxchg16b",
	"xsetbv, xsave and xrstor",
	"wrmsr and rdmsr",
	"hlt",
};
#define PROBE_STEPS (sizeof(step_names) / sizeof(step_names[0]))

/* The guest program.  Each step ends with `mov al, N; out PROBE_PORT, al`.
 * Steps the CPU model does not offer are overwritten with NOPs. */
static const uint8_t guest_code[] = {
	/* step 0: we are in 64-bit mode */
	0xb0, 0x01, 0xe6, PROBE_PORT, /* mov al, 1; out 0x80, al */
	/* step 1 (offset 4): cmpxchg16b on zeroed memory succeeds */
	0xbe, 0x00, 0x90, 0x00, 0x00, /* mov esi, PROBE_DATA */
	0x31, 0xc0,                   /* xor eax, eax */
	0x31, 0xd2,                   /* xor edx, edx */
	0xbb, 0x11, 0x11, 0x11, 0x11, /* mov ebx, CMPXCHG_LO */
	0xb9, 0x22, 0x22, 0x22, 0x22, /* mov ecx, CMPXCHG_HI */
	0xf0, 0x48, 0x0f, 0xc7, 0x0e, /* lock cmpxchg16b [rsi] */
	0xb0, 0x02, 0xe6, PROBE_PORT, /* mov al, 2; out */
	/* step 2 (offset 32): XCR0 = x87|SSE, then xsave64 and xrstor64 */
	0x31, 0xc9,                   /* xor ecx, ecx */
	0xb8, 0x03, 0x00, 0x00, 0x00, /* mov eax, 3 */
	0x31, 0xd2,                   /* xor edx, edx */
	0x0f, 0x01, 0xd1,             /* xsetbv */
	0xbf, 0x00, 0xa0, 0x00, 0x00, /* mov edi, PROBE_XSAVE */
	0x48, 0x0f, 0xae, 0x27,       /* xsave64 [rdi] (edx:eax = 3) */
	0x48, 0x0f, 0xae, 0x2f,       /* xrstor64 [rdi] */
	0xb0, 0x03, 0xe6, PROBE_PORT, /* mov al, 3; out */
	/* step 3 (offset 61): a guest MSR round trip */
	0xb9, 0x02, 0x01, 0x00, 0xc0,             /* mov ecx, MSR_KERNEL_GS_BASE */
	0xb8, 0x78, 0x56, 0x34, 0x12,             /* mov eax, MSR_VALUE */
	0x31, 0xd2,                               /* xor edx, edx */
	0x0f, 0x30,                               /* wrmsr */
	0x31, 0xc0,                               /* xor eax, eax */
	0x0f, 0x32,                               /* rdmsr */
	0x89, 0x04, 0x25, 0x10, 0x90, 0x00, 0x00, /* mov [PROBE_DATA + 16], eax */
	0xb0, 0x04, 0xe6, PROBE_PORT,             /* mov al, 4; out */
	/* step 4: the end */
	0xf4, /* hlt */
};
/* The work of steps 1 and 2, without their reporting `out`. */
#define CODE_CX16_AT   4
#define CODE_CX16_LEN  24
#define CODE_XSAVE_AT  32
#define CODE_XSAVE_LEN 25

#define fail(p, st, e, ...)                                              \
	do {                                                             \
		(p)->status = (st);                                      \
		(p)->err = (e);                                          \
		snprintf((p)->detail, sizeof((p)->detail), __VA_ARGS__); \
	} while (0)

static void build_guest(uint8_t *mem, bool cx16, bool xsave)
{
	uint64_t *gdt = (uint64_t *)(mem + PROBE_GDT);
	gdt[1] = 0x00af9b000000ffffULL; /* 64-bit code */
	gdt[2] = 0x00cf93000000ffffULL; /* data */
	*(uint64_t *)(mem + PROBE_PML4) = PROBE_PDPT | PTE_PW;
	*(uint64_t *)(mem + PROBE_PDPT) = PROBE_PD | PTE_PW;
	*(uint64_t *)(mem + PROBE_PD) = PROBE_PT | PTE_PW;
	uint64_t *pt = (uint64_t *)(mem + PROBE_PT);
	for (uint64_t i = 0; i < PROBE_MEM_SIZE / 0x1000; i++)
		pt[i] = (i << 12) | PTE_PW;
	memcpy(mem + PROBE_CODE, guest_code, sizeof(guest_code));
	if (!cx16)
		memset(mem + PROBE_CODE + CODE_CX16_AT, 0x90, CODE_CX16_LEN);
	if (!xsave)
		memset(mem + PROBE_CODE + CODE_XSAVE_AT, 0x90, CODE_XSAVE_LEN);
}

static int setup_cpuid(int kvm, int vcpu, bool *cx16, bool *xsave)
{
	/* A fixed buffer: the probe runs in a child of a possibly threaded
	 * process, where malloc is best avoided. */
	static union {
		struct kvm_cpuid2 h;
		char raw[sizeof(struct kvm_cpuid2) +
		         PROBE_CPUID_MAX * sizeof(struct kvm_cpuid_entry2)];
	} c;
	memset(&c, 0, sizeof(c));
	c.h.nent = PROBE_CPUID_MAX;
	if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, &c.h) < 0)
		return -errno;
	*cx16 = *xsave = false;
	for (uint32_t i = 0; i < c.h.nent; i++) {
		if (c.h.entries[i].function != 1)
			continue;
		*cx16 = c.h.entries[i].ecx & CPUID1_ECX_CX16;
		*xsave = c.h.entries[i].ecx & CPUID1_ECX_XSAVE;
		c.h.entries[i].ecx &= ~(1U << 27); /* OSXSAVE mirrors CR4; KVM sets it */
	}
	return ioctl(vcpu, KVM_SET_CPUID2, &c.h) < 0 ? -errno : 0;
}

/* The MSRs cove-vmm sets; returns the index of the first one refused, or
 * -1 when all were accepted (-2 - errno when the ioctl itself failed). */
static long setup_msrs(int vcpu)
{
	union {
		struct kvm_msrs h;
		char raw[sizeof(struct kvm_msrs) + X86_BOOT_MSRS_N * sizeof(struct kvm_msr_entry)];
	} m;
	memset(&m, 0, sizeof(m));
	for (size_t i = 0; i < X86_BOOT_MSRS_N; i++) {
		m.h.entries[i].index = x86_boot_msrs[i].index;
		m.h.entries[i].data = x86_boot_msrs[i].value;
	}
	m.h.nmsrs = X86_BOOT_MSRS_N;
	int r = ioctl(vcpu, KVM_SET_MSRS, &m.h);
	if (r < 0)
		return -2 - errno;
	return r == (int)X86_BOOT_MSRS_N ? -1 : r;
}

static int setup_regs(int vcpu, bool xsave)
{
	struct kvm_sregs s;
	if (ioctl(vcpu, KVM_GET_SREGS, &s) < 0)
		return -errno;
	struct kvm_segment code = {
		.limit = 0xffffffff,
		.selector = 0x8,
		.type = 11,
		.present = 1,
		.s = 1,
		.l = 1,
		.g = 1,
	};
	struct kvm_segment data = {
		.limit = 0xffffffff,
		.selector = 0x10,
		.type = 3,
		.present = 1,
		.s = 1,
		.db = 1,
		.g = 1,
	};
	s.cs = code;
	s.ds = s.es = s.fs = s.gs = s.ss = data;
	s.gdt.base = PROBE_GDT;
	s.gdt.limit = 3 * 8 - 1;
	s.cr3 = PROBE_PML4;
	s.cr4 = CR4_PAE | CR4_OSFXSR | CR4_OSXMMEX | (xsave ? CR4_OSXSAVE : 0);
	s.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_PG;
	s.efer = EFER_LME | EFER_LMA;
	if (ioctl(vcpu, KVM_SET_SREGS, &s) < 0)
		return -errno;
	struct kvm_regs r = { .rip = PROBE_CODE, .rsp = PROBE_STACK, .rflags = 0x2 };
	return ioctl(vcpu, KVM_SET_REGS, &r) < 0 ? -errno : 0;
}

static const char *step_name(unsigned int steps)
{
	return steps < PROBE_STEPS ? step_names[steps] : "after the end";
}

/* Runs the test guest until it halts; every outcome lands in *p. */
static void run_guest(int vcpu, struct kvm_run *run, const uint8_t *mem, bool cx16,
                      struct kvm_probe *p)
{
	for (unsigned int exits = 0; exits < PROBE_MAX_EXITS; exits++) {
		if (ioctl(vcpu, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			fail(p, KVM_PROBE_GUEST_FAILED, errno, "%s: KVM_RUN: %s",
			     step_name(p->steps), strerror(errno));
			return;
		}
		struct kvm_regs regs = { 0 };
		switch (run->exit_reason) {
		case KVM_EXIT_IO:
			if (run->io.direction == KVM_EXIT_IO_OUT && run->io.port == PROBE_PORT &&
			    run->io.size == 1)
				p->steps = *((uint8_t *)run + run->io.data_offset);
			continue;
		case KVM_EXIT_HLT: {
			uint64_t lo, hi;
			uint32_t msr;
			memcpy(&lo, mem + PROBE_DATA, 8);
			memcpy(&hi, mem + PROBE_DATA + 8, 8);
			memcpy(&msr, mem + PROBE_DATA + 16, 4);
			if (p->steps != PROBE_STEPS - 1)
				fail(p, KVM_PROBE_GUEST_FAILED, 0, "halted after %u of %zu steps",
				     p->steps, PROBE_STEPS - 1);
			else if (cx16 && (lo != CMPXCHG_LO || hi != CMPXCHG_HI))
				fail(p, KVM_PROBE_GUEST_FAILED, 0,
				     "lock cmpxchg16b stored a wrong value");
			else if (msr != MSR_VALUE)
				fail(p, KVM_PROBE_GUEST_FAILED, 0,
				     "rdmsr returned 0x%x after wrmsr of 0x%x", msr, MSR_VALUE);
			else
				p->status = KVM_PROBE_WORKS;
			return;
		}
		case KVM_EXIT_INTERNAL_ERROR:
			(void)ioctl(vcpu, KVM_GET_REGS, &regs);
			fail(p, KVM_PROBE_GUEST_FAILED, 0,
			     "%s: KVM internal error (%s) at rip 0x%llx", step_name(p->steps),
			     kvm_suberror_name(run->internal.suberror),
			     (unsigned long long)regs.rip);
			return;
		case KVM_EXIT_FAIL_ENTRY:
			fail(p, KVM_PROBE_GUEST_FAILED, 0, "%s: VM entry failed (reason 0x%llx)",
			     step_name(p->steps),
			     (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
			return;
		case KVM_EXIT_SHUTDOWN:
			(void)ioctl(vcpu, KVM_GET_REGS, &regs);
			fail(p, KVM_PROBE_GUEST_FAILED, 0, "%s: triple fault at rip 0x%llx",
			     step_name(p->steps), (unsigned long long)regs.rip);
			return;
		default:
			fail(p, KVM_PROBE_GUEST_FAILED, 0, "%s: unexpected KVM exit %u",
			     step_name(p->steps), run->exit_reason);
			return;
		}
	}
	fail(p, KVM_PROBE_GUEST_FAILED, 0, "%s: still running after %d exits", step_name(p->steps),
	     PROBE_MAX_EXITS);
}

/* Everything the child does; it exits right after, so fds and mappings
 * are left for the kernel to release. */
static void probe_child(const char *dev, struct kvm_probe *p)
{
	int kvm = open(dev, O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		int e = errno;
		enum kvm_probe_status st = KVM_PROBE_UNUSABLE;
		if (e == ENOENT || e == ENXIO || e == ENODEV)
			st = KVM_PROBE_ABSENT;
		else if (e == EACCES || e == EPERM)
			st = KVM_PROBE_NO_ACCESS;
		fail(p, st, e, "cannot open %s: %s", dev, strerror(e));
		return;
	}
	int v = ioctl(kvm, KVM_GET_API_VERSION, 0);
	if (v != KVM_API_VERSION) {
		fail(p, KVM_PROBE_UNUSABLE, 0, "KVM API version %d, not %d", v, KVM_API_VERSION);
		return;
	}
	for (size_t i = 0; i < KVM_REQUIRED_CAPS_N; i++)
		if (ioctl(kvm, KVM_CHECK_EXTENSION, kvm_required_caps[i].cap) <= 0) {
			fail(p, KVM_PROBE_UNUSABLE, 0, "KVM lacks %s", kvm_required_caps[i].name);
			return;
		}
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0) {
		fail(p, KVM_PROBE_UNUSABLE, errno, "KVM_CREATE_VM: %s", strerror(errno));
		return;
	}
	uint8_t *mem =
	    mmap(NULL, PROBE_MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		fail(p, KVM_PROBE_UNUSABLE, errno, "mmap: %s", strerror(errno));
		return;
	}
	struct kvm_userspace_memory_region region = {
		.memory_size = PROBE_MEM_SIZE,
		.userspace_addr = (uint64_t)(uintptr_t)mem,
	};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
		fail(p, KVM_PROBE_UNUSABLE, errno, "KVM_SET_USER_MEMORY_REGION: %s",
		     strerror(errno));
		return;
	}
	int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vcpu < 0 || run_size < (int)sizeof(struct kvm_run)) {
		fail(p, KVM_PROBE_UNUSABLE, errno, "KVM_CREATE_VCPU: %s", strerror(errno));
		return;
	}
	struct kvm_run *run =
	    mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED) {
		fail(p, KVM_PROBE_UNUSABLE, errno, "mmap of kvm_run: %s", strerror(errno));
		return;
	}
	bool cx16 = false, xsave = false;
	int r = setup_cpuid(kvm, vcpu, &cx16, &xsave);
	if (r < 0) {
		fail(p, KVM_PROBE_UNUSABLE, -r, "setting the vCPU's CPUID: %s", strerror(-r));
		return;
	}
	long bad = setup_msrs(vcpu);
	if (bad <= -2) {
		fail(p, KVM_PROBE_UNUSABLE, (int)(-2 - bad), "KVM_SET_MSRS: %s",
		     strerror((int)(-2 - bad)));
		return;
	}
	if (bad >= 0) {
		fail(p, KVM_PROBE_UNUSABLE, 0, "KVM_SET_MSRS refused MSR 0x%x",
		     x86_boot_msrs[bad].index);
		return;
	}
	if ((r = setup_regs(vcpu, xsave)) < 0) {
		fail(p, KVM_PROBE_UNUSABLE, -r, "setting 64-bit mode registers: %s", strerror(-r));
		return;
	}
	build_guest(mem, cx16, xsave);
	run_guest(vcpu, run, mem, cx16, p);
}

enum kvm_probe_status kvm_probe_run(const char *dev, unsigned int timeout_s, struct kvm_probe *p)
{
	memset(p, 0, sizeof(*p));
	p->backend = kvm_backend_detect("", p->vendor);
	struct stat st;
	if (stat(dev, &st) < 0) {
		fail(p, errno == ENOENT ? KVM_PROBE_ABSENT : KVM_PROBE_UNUSABLE, errno, "%s: %s",
		     dev, strerror(errno));
		return p->status;
	}
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		fail(p, KVM_PROBE_UNUSABLE, errno, "pipe: %s", strerror(errno));
		return p->status;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fail(p, KVM_PROBE_UNUSABLE, errno, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return p->status;
	}
	if (pid == 0) {
		/* SIGALRM's default action ends a guest that never halts. */
		signal(SIGALRM, SIG_DFL);
		alarm(timeout_s ? timeout_s : 1);
		close(fds[0]);
		struct kvm_probe c = *p;
		probe_child(dev, &c);
		ssize_t w = write(fds[1], &c, sizeof(c));
		_exit(w == (ssize_t)sizeof(c) ? 0 : 1);
	}
	close(fds[1]);
	struct kvm_probe c;
	size_t got = 0;
	int64_t deadline = mono_ms() + (int64_t)(timeout_s + 2) * 1000;
	while (got < sizeof(c)) {
		int64_t left = deadline - mono_ms();
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		if (left <= 0 || poll(&pfd, 1, (int)left) == 0)
			break;
		ssize_t n = read(fds[0], (char *)&c + got, sizeof(c) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	if (got < sizeof(c))
		kill(pid, SIGKILL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got == sizeof(c)) {
		*p = c;
	} else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
		fail(p, KVM_PROBE_GUEST_FAILED, 0, "the test guest did not finish within %u s",
		     timeout_s);
	} else {
		fail(p, KVM_PROBE_GUEST_FAILED, 0,
		     "the probe process ended without a verdict (%s %d)",
		     WIFSIGNALED(status) ? "signal" : "status",
		     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
	return p->status;
}

bool kvm_emulator_find(char *path, size_t len)
{
	const char *env = getenv("PATH");
	char dirs[4096];
	snprintf(dirs, sizeof(dirs), "%s", env && *env ? env : "/usr/local/bin:/usr/bin:/bin");
	char *save = NULL;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char cand[4200];
		snprintf(cand, sizeof(cand), "%s/qemu-system-x86_64", *d ? d : ".");
		if (access(cand, X_OK) == 0) {
			if (path && len)
				snprintf(path, len, "%s", cand);
			return true;
		}
	}
	return false;
}

enum kvm_route kvm_route_decide(const struct kvm_probe *p, bool emulator, char *why, size_t len)
{
	char cause[320];
	switch (p->status) {
	case KVM_PROBE_WORKS:
		if (len)
			why[0] = 0;
		return KVM_ROUTE_DIRECT;
	case KVM_PROBE_ABSENT:
		if (p->backend == KVM_BACKEND_NONE)
			snprintf(cause, sizeof(cause), "no /dev/kvm (no KVM module loaded%s)",
			         p->vendor[0] ? "" : ", and this CPU shows no VMX or SVM");
		else
			snprintf(cause, sizeof(cause),
			         "no /dev/kvm device node (a %s KVM module is loaded)",
			         kvm_backend_name(p->backend));
		break;
	case KVM_PROBE_NO_ACCESS:
		snprintf(cause, sizeof(cause),
		         "/dev/kvm: %s (add this user to group kvm, or run as root)",
		         strerror(p->err ? p->err : EACCES));
		break;
	case KVM_PROBE_UNUSABLE:
	case KVM_PROBE_GUEST_FAILED:
	default:
		if (p->backend == KVM_BACKEND_PVM)
			snprintf(cause, sizeof(cause),
			         "/dev/kvm is PVM (kvm_pvm): it runs only PVM guest kernels");
		else
			snprintf(cause, sizeof(cause),
			         "/dev/kvm (%s) cannot run a standard guest: %s",
			         kvm_backend_name(p->backend), p->detail);
		break;
	}
	if (emulator) {
		snprintf(why, len, "%s; using the emulated host", cause);
		return KVM_ROUTE_EMULATED;
	}
	snprintf(why, len,
	         "%s, and there is no emulated host (it needs qemu-system-x86_64 with SVM "
	         "emulation: run scripts/install-deps)",
	         cause);
	return KVM_ROUTE_NONE;
}
