/* The per-thread-kind seccomp filters (vmm/base/seccomp.c), installed in a
 * forked child through vmm_seccomp_install() as cove-vmm's threads do:
 * forbidden syscalls kill the child with SIGSYS, allowed ones do not.
 *
 * After the filter is in place the child makes only raw syscalls and
 * leaves through exit_group: the sanitizers' runtime (ASan's allocator,
 * LeakSanitizer at exit) makes syscalls no cove-vmm thread needs, and
 * would otherwise be what the filter kills. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/seccomp.h"

#include "unit.h"

enum probe {
	P_EXECVE,
	P_OPEN_HOST,
	P_SOCKET_INET,
	P_PTRACE,
	P_HARMLESS,
	P_SOCKET_UNIX,
	P_OPEN_DIRFD,
	P_TUNSETOFFLOAD,
	P_TUNSETIFF
};

/* Set before a probe: install the filters as a jailed cove-vmm does. */
static bool jailed;
/* The "precompiled" cases: as a pooled cove-vmm, the filters compiled
 * ahead (vmm_seccomp_precompile) and only loaded at install. */
static bool precompiled;
static void use_precompiled(void)
{
	precompiled = true;
}

/* In the child: the raw syscall for p, then exit_group(0).  Reaching the
 * exit means the filter let the syscall through. */
static void __attribute__((noreturn))
probe_child(enum vmm_thread_kind kind, enum probe p, int pipe_w)
{
	char err[256];
	/* What a jailed VMM opens before its filters: a directory's fd. */
	int dir = p == P_OPEN_DIRFD ? open("/etc", O_RDONLY | O_DIRECTORY) : -1;
	vmm_seccomp_set_jailed(jailed);
	if (precompiled && vmm_seccomp_precompile(VMM_SECCOMP_KILL, err, sizeof(err)) < 0)
		syscall(SYS_exit_group, 99);
	if (vmm_seccomp_install(kind, VMM_SECCOMP_KILL, err, sizeof(err)) < 0)
		syscall(SYS_exit_group, 100);
	static char *const argv[] = { "/bin/true", NULL };
	switch (p) {
	case P_EXECVE:
		syscall(SYS_execve, "/bin/true", argv, NULL);
		break;
	case P_OPEN_HOST:
		syscall(SYS_openat, AT_FDCWD, "/etc/passwd", O_RDONLY);
		break;
	case P_SOCKET_INET:
		syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
		break;
	case P_PTRACE:
		syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);
		break;
	case P_HARMLESS:
		if (syscall(SYS_getpid) <= 0 || syscall(SYS_write, pipe_w, "x", 1) != 1)
			syscall(SYS_exit_group, 101);
		break;
	case P_SOCKET_UNIX:
		if (syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0) < 0)
			syscall(SYS_exit_group, 102);
		break;
	case P_TUNSETOFFLOAD: /* on no fd: the filter decides, then EBADF */
		syscall(SYS_ioctl, -1, TUNSETOFFLOAD, 0UL);
		break;
	case P_TUNSETIFF:
		syscall(SYS_ioctl, -1, TUNSETIFF, NULL);
		break;
	case P_OPEN_DIRFD:
		if (dir < 0 || syscall(SYS_openat, dir, "passwd", O_RDONLY) < 0)
			syscall(SYS_exit_group, 103);
		break;
	}
	syscall(SYS_exit_group, 0);
	__builtin_unreachable();
}

/* The child's wait status for one probe; what it wrote to stderr in said
 * (the SIGSYS handler's line). */
static int run_probe_said(enum vmm_thread_kind kind, enum probe p, char *said, size_t len)
{
	int fds[2], errs[2];
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(pipe(errs), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (dup2(errs[1], 2) < 0)
			_exit(98);
		probe_child(kind, p, fds[1]);
	}
	close(fds[1]);
	close(errs[1]);
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	if (p == P_HARMLESS && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		char c = 0;
		ck_assert_int_eq(read(fds[0], &c, 1), 1);
		ck_assert_int_eq(c, 'x');
	}
	ssize_t n = read(errs[0], said, len - 1);
	said[n > 0 ? n : 0] = 0;
	close(fds[0]);
	close(errs[0]);
	return st;
}

static int run_probe(enum vmm_thread_kind kind, enum probe p)
{
	char said[256];
	return run_probe_said(kind, p, said, sizeof(said));
}

/* The syscall each killing probe makes, as the handler names it. */
static long probe_nr(enum probe p)
{
	switch (p) {
	case P_EXECVE:
		return SYS_execve;
	case P_OPEN_HOST:
	case P_OPEN_DIRFD:
		return SYS_openat;
	case P_SOCKET_INET:
	case P_SOCKET_UNIX:
		return SYS_socket;
	case P_PTRACE:
		return SYS_ptrace;
	case P_TUNSETOFFLOAD:
	case P_TUNSETIFF:
		return SYS_ioctl;
	case P_HARMLESS:
	default:
		return -1;
	}
}

/* Killed by SIGSYS, after one line on stderr naming the thread kind and
 * the syscall (a VMM's log says why it died). */
static void assert_killed(enum vmm_thread_kind kind, enum probe p, const char *what)
{
	char said[256], want[128];
	int st = run_probe_said(kind, p, said, sizeof(said));
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS,
	              "%s thread: %s was not killed by SIGSYS (status 0x%x)",
	              vmm_thread_kind_name(kind), what, st);
	snprintf(want, sizeof(want), "cove-vmm: seccomp: the %s thread made syscall %ld,",
	         vmm_thread_kind_name(kind), probe_nr(p));
	ck_assert_msg(strstr(said, want), "%s thread: %s: stderr said \"%s\", not \"%s\"",
	              vmm_thread_kind_name(kind), what, said, want);
}

static void assert_allowed(enum vmm_thread_kind kind, enum probe p, const char *what)
{
	int st = run_probe(kind, p);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	              "%s thread: %s did not go through (status 0x%x)", vmm_thread_kind_name(kind),
	              what, st);
}

static const enum vmm_thread_kind kinds[] = { VMM_THREAD_MAIN, VMM_THREAD_VCPU, VMM_THREAD_IO,
	                                      VMM_THREAD_API };

START_TEST(execve_kills)
{
	assert_killed(kinds[_i], P_EXECVE, "execve(\"/bin/true\")");
}
END_TEST

START_TEST(socket_inet_kills)
{
	assert_killed(kinds[_i], P_SOCKET_INET, "socket(AF_INET, SOCK_STREAM)");
}
END_TEST

START_TEST(ptrace_kills)
{
	assert_killed(kinds[_i], P_PTRACE, "ptrace(PTRACE_TRACEME)");
}
END_TEST

/* Only the API thread opens paths (snapshots create and reopen files):
 * for it, keeping host files out of reach is the jail's pivot_root. */
START_TEST(open_host_path_kills_except_api)
{
	if (kinds[_i] == VMM_THREAD_API)
		assert_allowed(kinds[_i], P_OPEN_HOST, "openat(\"/etc/passwd\")");
	else
		assert_killed(kinds[_i], P_OPEN_HOST, "openat(\"/etc/passwd\", O_RDONLY)");
}
END_TEST

/* Jailed, the API thread too is killed for a path: it may open only
 * relative to a descriptor (the snapshot directory, the jail root). */
START_TEST(jailed_api_opens_only_through_descriptors)
{
	jailed = true;
	assert_killed(VMM_THREAD_API, P_OPEN_HOST, "openat(AT_FDCWD, \"/etc/passwd\") (jailed)");
	assert_killed(VMM_THREAD_API, P_EXECVE, "execve (jailed)");
	assert_killed(VMM_THREAD_API, P_SOCKET_INET, "socket(AF_INET) (jailed)");
	assert_killed(VMM_THREAD_API, P_PTRACE, "ptrace (jailed)");
	assert_allowed(VMM_THREAD_API, P_OPEN_DIRFD, "openat(dirfd, \"passwd\") (jailed)");
	assert_allowed(VMM_THREAD_API, P_HARMLESS, "getpid and write (jailed)");
	jailed = false;
}
END_TEST

START_TEST(harmless_syscalls_pass)
{
	assert_allowed(kinds[_i], P_HARMLESS, "getpid and a write to a pipe");
}
END_TEST

/* The I/O thread connects vsock streams to Unix sockets; nobody else
 * makes sockets after start. */
START_TEST(socket_unix_only_on_io)
{
	if (kinds[_i] == VMM_THREAD_IO)
		assert_allowed(kinds[_i], P_SOCKET_UNIX, "socket(AF_UNIX)");
	else
		assert_killed(kinds[_i], P_SOCKET_UNIX, "socket(AF_UNIX)");
}
END_TEST

/* virtio-net sets the guest's offloads on the TAP from the I/O loop;
 * attaching a TAP (TUNSETIFF) happens only at set-up, before any filter. */
START_TEST(tun_offload_only_on_io)
{
	if (kinds[_i] == VMM_THREAD_IO)
		assert_allowed(kinds[_i], P_TUNSETOFFLOAD, "ioctl(TUNSETOFFLOAD)");
	else
		assert_killed(kinds[_i], P_TUNSETOFFLOAD, "ioctl(TUNSETOFFLOAD)");
	assert_killed(kinds[_i], P_TUNSETIFF, "ioctl(TUNSETIFF)");
}
END_TEST

START_TEST(log_mode_lets_everything_through)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char err[256];
		if (vmm_seccomp_install(VMM_THREAD_VCPU, VMM_SECCOMP_LOG, err, sizeof(err)) < 0)
			syscall(SYS_exit_group, 100);
		long fd = syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
		syscall(SYS_exit_group, fd >= 0 ? 0 : 103);
	}
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status 0x%x", st);
}
END_TEST

START_TEST(modes_parse)
{
	enum vmm_seccomp_mode m = VMM_SECCOMP_OFF;
	ck_assert_int_eq(vmm_seccomp_parse_mode("kill", &m), 0);
	ck_assert_int_eq(m, VMM_SECCOMP_KILL);
	ck_assert_int_eq(vmm_seccomp_parse_mode("log", &m), 0);
	ck_assert_int_eq(m, VMM_SECCOMP_LOG);
	ck_assert_int_eq(vmm_seccomp_parse_mode("off", &m), 0);
	ck_assert_int_eq(m, VMM_SECCOMP_OFF);
	ck_assert_int_eq(vmm_seccomp_parse_mode("Kill", &m), -EINVAL);
	ck_assert_int_eq(vmm_seccomp_parse_mode("", &m), -EINVAL);
	ck_assert_int_eq(vmm_seccomp_parse_mode(NULL, &m), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("seccomp");
	TCase *tc = tcase_create("kill");
	tcase_set_timeout(tc, 30);
	int n = (int)(sizeof(kinds) / sizeof(kinds[0]));
	tcase_add_loop_test(tc, execve_kills, 0, n);
	tcase_add_loop_test(tc, open_host_path_kills_except_api, 0, n);
	tcase_add_loop_test(tc, socket_inet_kills, 0, n);
	tcase_add_loop_test(tc, ptrace_kills, 0, n);
	tcase_add_loop_test(tc, harmless_syscalls_pass, 0, n);
	tcase_add_loop_test(tc, socket_unix_only_on_io, 0, n);
	tcase_add_loop_test(tc, tun_offload_only_on_io, 0, n);
	suite_add_tcase(s, tc);
	/* The same probes with the programs compiled ahead (cove-vmm --pool). */
	tc = tcase_create("precompiled");
	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, use_precompiled, NULL);
	tcase_add_loop_test(tc, execve_kills, 0, n);
	tcase_add_loop_test(tc, open_host_path_kills_except_api, 0, n);
	tcase_add_loop_test(tc, socket_inet_kills, 0, n);
	tcase_add_loop_test(tc, harmless_syscalls_pass, 0, n);
	tcase_add_loop_test(tc, socket_unix_only_on_io, 0, n);
	tcase_add_test(tc, jailed_api_opens_only_through_descriptors);
	suite_add_tcase(s, tc);
	tc = tcase_create("modes");
	tcase_add_test(tc, jailed_api_opens_only_through_descriptors);
	tcase_add_test(tc, log_mode_lets_everything_through);
	tcase_add_test(tc, modes_parse);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
