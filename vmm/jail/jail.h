/* The jail: the steps that confine cove-vmm once it has opened what it
 * needs (kernel, disks, KVM, sockets) and before any thread starts, in the
 * order Firecracker's jailer documents (our own code):
 *
 *   1. a mount namespace of its own (nested under the launcher's), every
 *      mount private, so nothing propagates back to the host;
 *   2. the jail root (the sandbox's root/ directory) bind-mounted on
 *      itself nosuid, nodev, noexec, with dev/kvm and dev/urandom bound in
 *      from the host; pivot_root into it and the old root detached;
 *   3. rlimits: no core dumps, a bounded nofile, fsize when given;
 *   4. the capability bounding set and ambient set emptied, securebits
 *      locked (no root fix-ups), then the per-sandbox uid/gid (when root
 *      launched it), then every capability cleared (libcap);
 *   5. no_new_privs.
 *
 * Closing inherited fds and clearing the environment happen first thing
 * in main (jail_scrub_process).  The PID, IPC, UTS and network namespaces
 * (and, for a launcher that is not root, the user namespace) are made by
 * libcove's clone3 before exec.  The seccomp filters follow per thread,
 * as each thread starts. */
#ifndef COVE_JAIL_H
#define COVE_JAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JAIL_NOFILE 4096 /* vsock allows 1024 connections, each a socket */

struct jail_config {
	const char *root; /* pivot_root into this directory; NULL: no mount steps */
	bool set_ids;     /* drop to uid/gid (the launcher was root) */
	uid_t uid;
	gid_t gid;
	uint64_t fsize; /* RLIMIT_FSIZE in bytes; 0: unlimited */
};

/* Closes every fd above 2 but keep_fd (-1: none; the inherited TAP of
 * --net fd=N) and clears the environment: the first thing cove-vmm does
 * once its flags are parsed, before it opens anything else. */
void jail_scrub_process(int keep_fd);

/* The part of step 4 that needs nothing of the sandbox: the capability
 * bounding set emptied, ambient capabilities cleared, securebits locked
 * (the capabilities the process holds stay until jail_enter).  A pooled
 * cove-vmm runs it before its start request; jail_enter runs it when it
 * has not run.  0, or -errno with a one-line message in err. */
int jail_bound(char *err, size_t errlen) __attribute__((warn_unused_result));

/* Runs the steps above.  Must be called while the process has one thread.
 * On success fills report with one line saying what was applied (for the
 * start log).  Returns 0, or -errno with a one-line message in err. */
int jail_enter(const struct jail_config *jc, char *report, size_t replen, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The path host_path has inside root once jailed ("/x" for "<root>/x"),
 * written to out; -EXDEV when host_path is not under root. */
int jail_path(const char *root, const char *host_path, char *out, size_t outlen)
    __attribute__((warn_unused_result));

#endif
