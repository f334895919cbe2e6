/* The seccomp allowlists: one table, one row per allowed syscall (or per
 * allowed argument value), each row marked with the thread kinds it is
 * for.  Why a row exists is said next to it; docs/jail.md
 * ("Seccomp filters") is this table as `cove-vmm --seccomp-list` prints it.
 *
 * What runs where (and so needs which rows):
 *   main  sets everything up before any filter, then installs its own and
 *         only waits (futex), joins threads and tears down: KVM ioeventfd
 *         and irqfd deassignment, munmap, close, unlink of its sockets.
 *   vCPU  KVM_RUN and the devices' register handlers: serial output,
 *         eventfd kicks, and virtio-vsock's activate/reset, which touch
 *         the host sockets (read, send, shutdown, epoll_ctl, timerfd).
 *   I/O   the epoll loop: virtqueue work, disk I/O, vsock host sockets
 *         (connecting to Unix sockets), virtio-rng's getrandom, the
 *         virtio-net TAP (its one ioctl, TUNSETOFFLOAD).  No open.
 *   API   the control socket and what its ops need: a snapshot reads KVM
 *         state (KVM_GET_*), writes files and moves disks (the only thread
 *         that may open, create, rename or remove paths).
 */
#include "base/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <linux/if_tun.h>
#include <linux/kvm.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define K_MAIN (1u << VMM_THREAD_MAIN)
#define K_VCPU (1u << VMM_THREAD_VCPU)
#define K_IO   (1u << VMM_THREAD_IO)
/* The API thread's rows come in two sets: K_APIU where cove-vmm runs
 * unjailed (it makes snapshot directories by path), K_APIJ inside the jail,
 * where every file it touches is reached through a descriptor: the
 * path-taking calls are refused there, and the *at calls need a real
 * directory fd, never AT_FDCWD. */
#define K_APIU (1u << VMM_THREAD_API)
#define K_APIJ (1u << 8)
#define K_API  (K_APIU | K_APIJ)
#define K_ALL  (K_MAIN | K_VCPU | K_IO | K_API)

/* The signal that kicks a vCPU out of KVM_RUN (VCPU_KICK_SIGNAL in
 * core/vm_state.h; the two must agree). */
#define KICK_SIGNAL SIGUSR1

struct sc_rule {
	int nr;
	const char *name;
	int arg; /* -1: any arguments */
	enum scmp_compare op;
	uint64_t a, b;      /* the comparison's datums (mask and value for MASKED_EQ) */
	const char *what;   /* the limit, in words */
	unsigned int kinds; /* K_* */
};

#define ANY(sys, k)                                         \
	{                                                   \
		SCMP_SYS(sys), #sys, -1, 0, 0, 0, NULL, (k) \
	}
#define EQ(sys, n, v, what, k)                                             \
	{                                                                  \
		SCMP_SYS(sys), #sys, (n), SCMP_CMP_EQ, (v), 0, (what), (k) \
	}
#define MASKED(sys, n, m, v, what, k)                                               \
	{                                                                           \
		SCMP_SYS(sys), #sys, (n), SCMP_CMP_MASKED_EQ, (m), (v), (what), (k) \
	}
/* A dirfd that is a descriptor: 0..INT_MAX as the 64-bit register holds
 * it (AT_FDCWD, -100, is above that however it is passed). */
#define DIRFD(sys, n, k)                                               \
	{                                                              \
		SCMP_SYS(sys), #sys, (n), SCMP_CMP_LE, 0x7fffffffu, 0, \
		    "dirfd a descriptor, not AT_FDCWD (jailed)", (k)   \
	}
/* The kernel reads an ioctl request as 32 bits: compare only those. */
#define IOCTL(req, k) MASKED(ioctl, 1, 0xffffffffu, (uint32_t)(req), #req, (k))

static const struct sc_rule rules[] = {
	/* Memory: malloc, thread stacks; never executable. */
	ANY(brk, K_ALL),
	MASKED(mmap, 2, PROT_EXEC, 0, "prot without PROT_EXEC", K_ALL),
	MASKED(mprotect, 2, PROT_EXEC, 0, "prot without PROT_EXEC", K_ALL),
	ANY(munmap, K_ALL),
	ANY(mremap, K_ALL),
	/* glibc returns freed arena memory and dead threads' stacks. */
	EQ(madvise, 2, MADV_DONTNEED, "MADV_DONTNEED", K_ALL),

	/* Threads, locks, time, signals. */
	ANY(futex, K_ALL),
	ANY(exit, K_ALL),
	ANY(exit_group, K_ALL),
	ANY(rt_sigreturn, K_ALL),
	ANY(rt_sigprocmask, K_ALL),
	ANY(restart_syscall, K_ALL),
	ANY(sched_yield, K_ALL),
	ANY(getpid, K_ALL),
	ANY(gettid, K_ALL),
	/* pthread_kill of a vCPU (vm_pause, vm_request_stop): only the kick. */
	EQ(tgkill, 2, KICK_SIGNAL, "SIGUSR1 only, the vCPU kick", K_ALL),
	/* The vDSO answers these, except on hosts whose clock it cannot read. */
	ANY(clock_gettime, K_ALL),
	ANY(gettimeofday, K_ALL),
	ANY(clock_nanosleep, K_ALL),
	ANY(nanosleep, K_ALL),

	/* File descriptors already open. */
	ANY(close, K_ALL),
	ANY(write, K_ALL), /* stderr, eventfds, console output */
	ANY(read, K_VCPU | K_IO | K_API),
	ANY(fstat, K_ALL),
	/* stdio's first write to a stream asks for the offset. */
	EQ(lseek, 2, SEEK_CUR, "whence SEEK_CUR", K_MAIN | K_VCPU | K_IO),
	/* glibc's fstat(fd) is newfstatat(fd, "", AT_EMPTY_PATH). */
	MASKED(newfstatat, 3, AT_EMPTY_PATH, AT_EMPTY_PATH, "flags with AT_EMPTY_PATH, as fstat",
	       K_VCPU | K_IO),
	/* main lstat()s its sockets before removing them; API: snapshots. */
	ANY(newfstatat, K_MAIN | K_APIU),

	/* main: the teardown after the vCPUs have ended. */
	IOCTL(KVM_IOEVENTFD, K_MAIN), /* deassigning the virtqueue notifiers */
	IOCTL(KVM_IRQFD, K_MAIN),     /* deassigning the interrupt eventfds */
	ANY(epoll_ctl, K_MAIN | K_VCPU | K_IO),
	ANY(unlink, K_MAIN | K_APIU), /* the control socket, the vsock listener */
	ANY(fdatasync, K_MAIN | K_IO | K_API),
	ANY(fsync, K_MAIN | K_IO | K_API),

	/* vCPU: the run loop and the internal-error report. */
	IOCTL(KVM_RUN, K_VCPU),
	IOCTL(KVM_GET_REGS, K_VCPU | K_API),
	IOCTL(KVM_TRANSLATE, K_VCPU),

	/* vCPU (vsock activate/reset) and I/O: the vsock host sockets. */
	ANY(readv, K_VCPU | K_IO),
	ANY(writev, K_VCPU | K_IO),
	ANY(recvfrom, K_ALL & ~K_MAIN),
	ANY(sendto, K_ALL & ~K_MAIN),
	ANY(recvmsg, K_VCPU | K_IO | K_API), /* API: a request may carry an fd */
	ANY(sendmsg, K_VCPU | K_IO),
	ANY(shutdown, K_VCPU | K_IO),
	ANY(getsockopt, K_VCPU | K_IO),
	ANY(timerfd_settime, K_VCPU | K_IO),
	ANY(timerfd_gettime, K_VCPU | K_IO),

	/* I/O: the loop, disks, the vsock host side, virtio-rng. */
	ANY(epoll_wait, K_IO),
	ANY(epoll_pwait, K_IO),
	ANY(preadv, K_IO),
	ANY(pwritev, K_IO),
	/* vCPU, I/O and main: the console file (written at its offset, its
	 * newest half moved to the front past --console-max). */
	ANY(pread64, K_ALL),
	ANY(pwrite64, K_ALL),
	ANY(fallocate, K_IO | K_API), /* discard and write-zeroes punch holes */
	ANY(accept4, K_IO | K_API),
	/* A guest connection to host port P connects to the Unix socket
	 * PATH_P (backend/vsock_unix.c).  Never AF_INET. */
	EQ(socket, 0, AF_UNIX, "domain AF_UNIX", K_IO),
	ANY(connect, K_IO),
	/* Timers: vsock's connect deadlines, and the rate limiter and --ttl. */
	ANY(timerfd_create, K_IO),
	ANY(getrandom, K_IO),
	/* TUN (virtio-net, backend/tap.c): TUNSETIFF, TUNGETIFF and
	 * TUNSETVNETHDRSZ run at setup on main, before any filter.  The
	 * offloads the guest negotiates are set on the I/O loop (the vCPU's
	 * DRIVER_OK write only defers them there); the TAP's frames move with
	 * read/readv/writev, rows above. */
	IOCTL(TUNSETOFFLOAD, K_IO),

	/* API: the control socket. */
	ANY(poll, K_API),
	ANY(ppoll, K_API),
	/* API: snapshots (snapshot/save.c, common/io.c, common/qcow2_create.c,
	 * backend/disk_open.c): the only thread that opens or makes paths. */
	ANY(openat, K_APIU),
	ANY(mkdir, K_APIU),
	ANY(mkdirat, K_APIU),
	ANY(rmdir, K_APIU),
	ANY(rename, K_APIU),
	ANY(renameat, K_APIU),
	ANY(renameat2, K_APIU),
	ANY(unlinkat, K_APIU),
	ANY(chmod, K_APIU),
	ANY(fchmod, K_API),
	ANY(fchmodat, K_APIU),
	ANY(fchown, K_API),
	ANY(ftruncate, K_ALL), /* the console past its cap; snapshot files */
	ANY(lseek, K_API),     /* SEEK_DATA/SEEK_HOLE over a RAM file */
	ANY(mincore, K_API),   /* the resident pages of anonymous RAM (snapshot/save.c) */
	ANY(copy_file_range, K_API),
	EQ(fcntl, 1, F_DUPFD_CLOEXEC, "F_DUPFD_CLOEXEC: the snapshot directory", K_API),
	ANY(flock, K_API),
	/* Jailed API: relative to the snapshot directory's fd (passed with the
	 * request) or the jail root's (opened before any filter). */
	DIRFD(openat, 0, K_APIJ),
	DIRFD(renameat, 0, K_APIJ),
	DIRFD(unlinkat, 0, K_APIJ),
	DIRFD(fchmodat, 0, K_APIJ),
	DIRFD(newfstatat, 0, K_APIJ),
	DIRFD(statx, 0, K_APIJ),
	ANY(statx, K_APIU),
	ANY(readlink, K_APIU), /* realpath() of read-only disks */
	ANY(getcwd, K_APIU),
	IOCTL(FICLONE, K_API),      /* copy_file_sparse: a reflink first */
	IOCTL(BLKGETSIZE64, K_API), /* reopening a disk that is a block device */
	IOCTL(KVM_GET_PIT2, K_API),
	IOCTL(KVM_GET_IRQCHIP, K_API),
	IOCTL(KVM_GET_CLOCK, K_API),
	IOCTL(KVM_KVMCLOCK_CTRL, K_API), /* resume: the guest learns it was paused */
	IOCTL(KVM_GET_MSR_INDEX_LIST, K_API),
	IOCTL(KVM_GET_MP_STATE, K_API),
	IOCTL(KVM_GET_SREGS, K_API),
	IOCTL(KVM_GET_XSAVE, K_API),
	IOCTL(KVM_GET_XCRS, K_API),
	IOCTL(KVM_GET_DEBUGREGS, K_API),
	IOCTL(KVM_GET_LAPIC, K_API),
	IOCTL(KVM_GET_VCPU_EVENTS, K_API),
	IOCTL(KVM_GET_TSC_KHZ, K_API),
	IOCTL(KVM_GET_MSRS, K_API),
	IOCTL(KVM_GET_CPUID2, K_API),
#ifdef COVE_SANITIZE
	/* Sanitizer builds only (make sanitize, common/sanitize.h): what the
	 * ASan/LSan runtime calls once the filters are in.  A thread that
	 * ends frees its alternate signal stack.  LeakSanitizer, at exit on
	 * main, clones a tracer (which inherits main's filter), ptraces the
	 * threads still there and reads /proc/self/task and /proc/self/maps
	 * (the jail mounts a /proc in these builds: jail/jail.c). */
	ANY(sigaltstack, K_ALL),
	/* Its allocator's fresh regions: kept out of core dumps, small pages. */
	EQ(madvise, 2, MADV_DONTDUMP, "MADV_DONTDUMP (sanitizer)", K_ALL),
	EQ(madvise, 2, MADV_NOHUGEPAGE, "MADV_NOHUGEPAGE (sanitizer)", K_ALL),
	ANY(prctl, K_MAIN),
	ANY(clone, K_MAIN),
	ANY(ptrace, K_MAIN),
	ANY(wait4, K_MAIN),
	ANY(getppid, K_MAIN),
	ANY(rt_sigaction, K_MAIN),
	ANY(openat, K_MAIN),
	ANY(open, K_MAIN),
	ANY(read, K_MAIN),
	ANY(getdents, K_MAIN),
	ANY(getdents64, K_MAIN),
	ANY(lseek, K_MAIN),
	ANY(kill, K_MAIN),
	ANY(tgkill, K_MAIN),
	ANY(sched_getaffinity, K_MAIN),
#endif
};

static const char *const kind_names[VMM_THREAD_KINDS] = { "main", "vcpu", "io", "api" };

const char *vmm_thread_kind_name(enum vmm_thread_kind kind)
{
	return (unsigned int)kind < VMM_THREAD_KINDS ? kind_names[kind] : "?";
}

const char *vmm_seccomp_mode_name(enum vmm_seccomp_mode mode)
{
	switch (mode) {
	case VMM_SECCOMP_KILL:
		return "kill";
	case VMM_SECCOMP_LOG:
		return "log";
	case VMM_SECCOMP_OFF:
	default:
		return "off";
	}
}

int vmm_seccomp_parse_mode(const char *s, enum vmm_seccomp_mode *mode)
{
	if (!s)
		return -EINVAL;
	if (!strcmp(s, "kill"))
		*mode = VMM_SECCOMP_KILL;
	else if (!strcmp(s, "log"))
		*mode = VMM_SECCOMP_LOG;
	else if (!strcmp(s, "off"))
		*mode = VMM_SECCOMP_OFF;
	else
		return -EINVAL;
	return 0;
}

static bool jailed;

/* ---- a refused syscall, said before the process dies -------------------------
 *
 * The filters trap (SCMP_ACT_TRAP) rather than kill outright: the handler
 * writes one line to stderr (the sandbox's vmm.log) naming the thread kind
 * and the syscall, then dies of SIGSYS all the same.  Without it a VMM
 * killed by its filter vanishes silently and its caller sees only a closed
 * socket.  The handler is SA_RESETHAND and SIGSYS stays blocked while it
 * runs, so its own refused call (reboot, in no thread's list) makes the
 * kernel force SIGSYS's default action: the process ends, killed by
 * SIGSYS, as with SCMP_ACT_KILL_PROCESS. */
static __thread int thread_kind = -1;

/* Appends decimal v to buf at *at (async-signal-safe: no stdio). */
static void put_dec(char *buf, size_t *at, size_t cap, unsigned long v)
{
	char tmp[24];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < sizeof(tmp));
	while (n && *at < cap)
		buf[(*at)++] = tmp[--n];
}

static void put_str(char *buf, size_t *at, size_t cap, const char *s)
{
	while (*s && *at < cap)
		buf[(*at)++] = *s++;
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	int saved = errno;
	char line[160];
	size_t at = 0;
	const char *kind = thread_kind >= 0 && thread_kind < VMM_THREAD_KINDS
	                       ? kind_names[thread_kind]
	                       : "unconfined";
	put_str(line, &at, sizeof(line) - 1, "cove-vmm: seccomp: the ");
	put_str(line, &at, sizeof(line) - 1, kind);
	put_str(line, &at, sizeof(line) - 1, " thread made syscall ");
	put_dec(line, &at, sizeof(line) - 1, (unsigned long)si->si_syscall);
	put_str(line, &at, sizeof(line) - 1, ", which its filter refuses (`ausyscall ");
	put_dec(line, &at, sizeof(line) - 1, (unsigned long)si->si_syscall);
	put_str(line, &at, sizeof(line) - 1, "` names it); killed by SIGSYS\n");
	ssize_t w = write(2, line, at);
	(void)w;
	errno = saved;
	syscall(SYS_reboot, 0L, 0L, 0L, 0L);
}

/* The handler, process-wide, once: before the first filter is loaded. */
static int trap_handler(char *err, size_t errlen)
{
	static bool done;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&lock);
	int r = 0;
	if (!done) {
		struct sigaction sa = { .sa_sigaction = on_sigsys,
			                .sa_flags = SA_SIGINFO | SA_RESETHAND };
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSYS, &sa, NULL) < 0) {
			r = -errno;
			snprintf(err, errlen, "seccomp: cannot handle SIGSYS: %s", strerror(errno));
		} else {
			done = true;
		}
	}
	pthread_mutex_unlock(&lock);
	return r;
}

void vmm_seccomp_set_jailed(bool on)
{
	jailed = on;
}

/* The filter of one set of rows (bit), as a libseccomp context; NULL with
 * err on failure. */
static scmp_filter_ctx build(unsigned int bit, enum vmm_thread_kind kind,
                             enum vmm_seccomp_mode mode, char *err, size_t errlen)
{
	uint32_t deflt = mode == VMM_SECCOMP_LOG ? SCMP_ACT_LOG : SCMP_ACT_TRAP;
	scmp_filter_ctx ctx = seccomp_init(deflt);
	if (!ctx) {
		snprintf(err, errlen, "seccomp: cannot create the %s thread's filter",
		         kind_names[kind]);
		return NULL;
	}
	int r = 0;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]) && r == 0; i++) {
		const struct sc_rule *x = &rules[i];
		if (!(x->kinds & bit))
			continue;
		if (x->arg < 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, x->nr, 0);
		else
			r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, x->nr, 1,
			                     SCMP_CMP((unsigned int)x->arg, x->op, x->a, x->b));
		if (r < 0)
			snprintf(err, errlen, "seccomp: cannot allow %s%s%s for the %s thread: %s",
			         x->name, x->what ? " " : "", x->what ? x->what : "",
			         kind_names[kind], strerror(-r));
	}
	if (r < 0) {
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

/* Filters compiled ahead (vmm_seccomp_precompile): the BPF libseccomp
 * would load, per set of rows, for one mode. */
#define PRE_SETS (VMM_THREAD_KINDS + 1) /* the kinds, then the jailed API */
static struct {
	bool ready;
	enum vmm_seccomp_mode mode;
	struct sock_filter *prog[PRE_SETS];
	unsigned short len[PRE_SETS];
} pre;

static unsigned int set_bit(unsigned int set)
{
	return set == VMM_THREAD_KINDS ? K_APIJ : 1u << set;
}

int vmm_seccomp_precompile(enum vmm_seccomp_mode mode, char *err, size_t errlen)
{
	if (mode == VMM_SECCOMP_OFF || pre.ready)
		return 0;
	int r = 0;
	for (unsigned int set = 0; set < PRE_SETS && r == 0; set++) {
		enum vmm_thread_kind kind =
		    set == VMM_THREAD_KINDS ? VMM_THREAD_API : (enum vmm_thread_kind)set;
		scmp_filter_ctx ctx = build(set_bit(set), kind, mode, err, errlen);
		if (!ctx)
			return -EINVAL;
		/* libseccomp 2.5 exports to an fd only: a memfd, read back. */
		int fd = memfd_create("seccomp", MFD_CLOEXEC);
		r = fd < 0 ? -errno : seccomp_export_bpf(ctx, fd);
		seccomp_release(ctx);
		off_t size = r == 0 ? lseek(fd, 0, SEEK_END) : -1;
		if (r == 0 && (size <= 0 || size % sizeof(struct sock_filter) ||
		               size / sizeof(struct sock_filter) > BPF_MAXINSNS))
			r = -EINVAL;
		if (r == 0 && !(pre.prog[set] = malloc((size_t)size)))
			r = -ENOMEM;
		if (r == 0 && pread(fd, pre.prog[set], (size_t)size, 0) != size)
			r = -EIO;
		if (r == 0)
			pre.len[set] = (unsigned short)(size / sizeof(struct sock_filter));
		if (fd >= 0)
			close(fd);
		if (r < 0)
			snprintf(err, errlen, "seccomp: cannot compile the %s thread's filter: %s",
			         kind_names[kind], strerror(-r));
	}
	if (r < 0) {
		for (unsigned int set = 0; set < PRE_SETS; set++) {
			free(pre.prog[set]);
			pre.prog[set] = NULL;
		}
		return r;
	}
	pre.mode = mode;
	pre.ready = true;
	return 0;
}

int vmm_seccomp_install(enum vmm_thread_kind kind, enum vmm_seccomp_mode mode, char *err,
                        size_t errlen)
{
	if (mode == VMM_SECCOMP_OFF)
		return 0;
	if ((unsigned int)kind >= VMM_THREAD_KINDS) {
		snprintf(err, errlen, "seccomp: unknown thread kind %d", (int)kind);
		return -EINVAL;
	}
	unsigned int bit = kind == VMM_THREAD_API && jailed ? K_APIJ : 1u << kind;
	int rh = mode == VMM_SECCOMP_KILL ? trap_handler(err, errlen) : 0;
	if (rh < 0)
		return rh;
	thread_kind = (int)kind;
	if (pre.ready && pre.mode == mode) {
		/* What seccomp_load does with the same program: no_new_privs,
		 * then the filter. */
		unsigned int set = bit == K_APIJ ? VMM_THREAD_KINDS : (unsigned int)kind;
		struct sock_fprog prog = { .len = pre.len[set], .filter = pre.prog[set] };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
			int e = errno;
			snprintf(err, errlen, "seccomp: cannot load the %s thread's filter: %s",
			         kind_names[kind], strerror(e));
			return -e;
		}
		return 0;
	}
	scmp_filter_ctx ctx = build(bit, kind, mode, err, errlen);
	if (!ctx)
		return -EINVAL;
	int r = seccomp_load(ctx);
	if (r < 0)
		snprintf(err, errlen, "seccomp: cannot load the %s thread's filter: %s",
		         kind_names[kind], strerror(-r));
	seccomp_release(ctx);
	return r < 0 ? r : 0;
}

/* ---- confined threads ------------------------------------------------------ */

struct start_gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int r;
	char name[16];
	enum vmm_thread_kind kind;
	enum vmm_seccomp_mode mode;
	void *(*fn)(void *);
	void *arg;
	char err[256];
};

#define VMM_THREAD_STACK (1u << 20)

static void *confined(void *opaque)
{
	struct start_gate *g = opaque;
	void *(*fn)(void *) = g->fn;
	void *arg = g->arg;
	/* Named before the filter: pthread_setname_np needs prctl. */
	if (g->name[0])
		(void)pthread_setname_np(pthread_self(), g->name);
	int r = vmm_seccomp_install(g->kind, g->mode, g->err, sizeof(g->err));
	pthread_mutex_lock(&g->lock);
	g->r = r;
	g->done = true;
	pthread_cond_signal(&g->cond);
	pthread_mutex_unlock(&g->lock);
	/* g lives on the starter's stack: not touched after this point. */
	return r < 0 ? NULL : fn(arg);
}

int vmm_seccomp_thread_start(pthread_t *t, const char *name, enum vmm_thread_kind kind,
                             enum vmm_seccomp_mode mode, void *(*fn)(void *), void *arg, char *err,
                             size_t errlen)
{
	struct start_gate g = { .kind = kind, .mode = mode, .fn = fn, .arg = arg };
	snprintf(g.name, sizeof(g.name), "%s", name ? name : "");
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	/* 1 MiB stacks (the deepest, the API thread's, uses a few tens of
	 * KiB).  Under 2 MiB on purpose: with transparent huge pages always on,
	 * a default 8 MiB stack whose top lands on a 2 MiB boundary (as it does
	 * below the 2 MiB-aligned guest RAM) is given a huge page on its first
	 * touch, 2 MiB of private memory per thread (measured: 2 MiB more per
	 * restored sandbox). */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	(void)pthread_attr_setstacksize(&attr, VMM_THREAD_STACK);
	int r = -pthread_create(t, &attr, confined, &g);
	pthread_attr_destroy(&attr);
	if (r < 0) {
		snprintf(err, errlen, "cannot start the %s thread: %s", vmm_thread_kind_name(kind),
		         strerror(-r));
	} else {
		pthread_mutex_lock(&g.lock);
		while (!g.done)
			pthread_cond_wait(&g.cond, &g.lock);
		r = g.r;
		pthread_mutex_unlock(&g.lock);
		if (r < 0) {
			pthread_join(*t, NULL);
			snprintf(err, errlen, "%s", g.err);
		}
	}
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
	return r;
}

/* ---- the table, printed ------------------------------------------------------ */

void vmm_seccomp_list(FILE *out)
{
	for (unsigned int k = 0; k <= VMM_THREAD_KINDS; k++) {
		/* The last pass: the API thread inside the jail. */
		unsigned int bit = k < VMM_THREAD_KINDS ? 1u << k : K_APIJ;
		fprintf(out, "%s:\n", k < VMM_THREAD_KINDS ? kind_names[k] : "api (jailed)");
		for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
			const struct sc_rule *x = &rules[i];
			if (!(x->kinds & bit))
				continue;
			/* One line per syscall: its argument limits joined. */
			bool first = true;
			for (size_t j = 0; j < i; j++)
				if ((rules[j].kinds & bit) && rules[j].nr == x->nr)
					first = false;
			if (!first)
				continue;
			fprintf(out, "  %s", x->name);
			bool any = false, limited = false;
			for (size_t j = i; j < sizeof(rules) / sizeof(rules[0]); j++) {
				const struct sc_rule *y = &rules[j];
				if (!(y->kinds & bit) || y->nr != x->nr)
					continue;
				if (y->arg < 0) {
					any = true;
					continue;
				}
				fprintf(out, "%s%s", limited ? ", " : ": ", y->what);
				limited = true;
			}
			if (any && limited)
				fprintf(out, " (or any: another row allows all)");
			fputc('\n', out);
		}
	}
}
