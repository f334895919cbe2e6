/* Per-thread-kind seccomp allowlists for cove-vmm (docs/jail.md,
 * "Seccomp filters").  One table in seccomp.c lists every syscall each
 * thread kind may make, with the argument limits (ioctl request numbers,
 * socket families, no PROT_EXEC); `cove-vmm --seccomp-list` prints it.
 *
 * Filters are per thread and inherited by threads created later, so each
 * thread installs its own at its start (vmm_seccomp_thread_start does it
 * for the threads cove-vmm creates) and the main thread installs its own
 * last, once every other thread exists.
 *
 * It lives in vmm/base because the I/O loop (base/evloop.c) installs the
 * I/O thread's filter and nothing here needs a higher floor. */
#ifndef COVE_VMM_SECCOMP_H
#define COVE_VMM_SECCOMP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum vmm_thread_kind { VMM_THREAD_MAIN, VMM_THREAD_VCPU, VMM_THREAD_IO, VMM_THREAD_API };
#define VMM_THREAD_KINDS 4

/* OFF is 0 so that a zeroed struct (a unit test's VM or loop) installs
 * nothing; cove-vmm's own default (--seccomp) is KILL. */
enum vmm_seccomp_mode {
	VMM_SECCOMP_OFF = 0,
	VMM_SECCOMP_KILL, /* a syscall not allowed kills the whole process (SIGSYS) */
	VMM_SECCOMP_LOG,  /* allowed, but logged by the kernel (audit type=1326) */
};

/* Whether cove-vmm runs jailed (pivoted into its root): the API thread's
 * filter then refuses the path-taking calls and AT_FDCWD.  Set it before
 * any thread starts. */
void vmm_seccomp_set_jailed(bool on);

/**
 * vmm_seccomp_install() - confine the calling thread to kind's allowlist
 * @kind:	which table rows apply
 * @mode:	what a syscall outside the list does; OFF installs nothing
 * @err:	one-line reason on failure
 * @errlen:	size of err
 *
 * Also sets no_new_privs (the kernel requires it without CAP_SYS_ADMIN).
 * Only this thread and threads it creates afterwards are filtered.
 * Return: 0, or -errno.
 */
/* Compiles every thread kind's filter for mode now (a pooled cove-vmm,
 * while it waits), so that vmm_seccomp_install later only loads the
 * program libseccomp would have built then (the same BPF, the same
 * no_new_privs).  Call before any filter is installed.  0, or -errno. */
int vmm_seccomp_precompile(enum vmm_seccomp_mode mode, char *err, size_t errlen)
    __attribute__((warn_unused_result));

int vmm_seccomp_install(enum vmm_thread_kind kind, enum vmm_seccomp_mode mode, char *err,
                        size_t errlen) __attribute__((warn_unused_result));

/**
 * vmm_seccomp_thread_start() - start a thread that is confined from its
 * first line of fn
 * @t:		the new thread, on success
 * @name:	its name (shown in /proc/PID/task/TID/comm), set before the filter
 * @kind, @mode: its filter (vmm_seccomp_install)
 * @fn, @arg:	what it runs once confined
 * @err, @errlen: one-line reason on failure
 *
 * Waits until the new thread has installed its filter; if that failed the
 * thread is joined without running fn.  Return: 0, or -errno.
 */
int vmm_seccomp_thread_start(pthread_t *t, const char *name, enum vmm_thread_kind kind,
                             enum vmm_seccomp_mode mode, void *(*fn)(void *), void *arg, char *err,
                             size_t errlen) __attribute__((warn_unused_result));

/* "kill", "log", "off" -> mode; returns -EINVAL for anything else. */
int vmm_seccomp_parse_mode(const char *s, enum vmm_seccomp_mode *mode)
    __attribute__((warn_unused_result));
const char *vmm_seccomp_mode_name(enum vmm_seccomp_mode mode);
const char *vmm_thread_kind_name(enum vmm_thread_kind kind);

/* Prints every thread kind's allowlist, one syscall (and its argument
 * limit) a line, from the table the filters are built from. */
void vmm_seccomp_list(FILE *out);

#endif
