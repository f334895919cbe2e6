/* The child set-up that cove-vmm's spawn (lib/vmm/vmm_proc.c) and
 * cove-egress's (lib/net/net_egress.c) share: clone3 into namespaces and a
 * cgroup with a pidfd, the child's signal state before exec, its /proc
 * files (id maps), and the listening Unix sockets a child is given. */
#ifndef COVE_BASE_SPAWN_H
#define COVE_BASE_SPAWN_H

#include <stdint.h>
#include <sys/types.h>

/* clone3 with flags (CLONE_NEW*), CLONE_PIDFD (into *pidfd) and, for
 * cgroup_fd >= 0, CLONE_INTO_CGROUP; the child gets SIGCHLD's exit
 * signal.  Returns as fork does: 0 in the child, the pid, or -1 (errno). */
pid_t spawn_clone3(uint64_t flags, int cgroup_fd, int *pidfd);

/* In the child, before exec: SIGINT, SIGTERM, SIGHUP and SIGPIPE back to
 * their defaults and no signal blocked.  Async-signal-safe. */
void spawn_signals_default(void);

/* Writes val to /proc/<pid>/<file> (setgroups, uid_map, gid_map): 0 or
 * -errno. */
int spawn_write_proc(pid_t pid, const char *file, const char *val);

/* A listening Unix socket at path (a child's readiness or control
 * socket): the fd or -errno. */
int spawn_listen(const char *path);

#endif
