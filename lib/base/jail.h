/* libcove's side of the jail: what a sandbox's cove-vmm is confined with
 * and the host-side set-up it needs before it starts.  cove-vmm itself
 * runs the in-process steps (vmm/jail/jail.h); libcove decides the mode,
 * claims the per-sandbox uid, prepares the jail root, makes the cgroup and
 * creates the namespaces with clone3 (lib/vmm/vmm_proc.c, lib/base/spawn.c). */
#ifndef COVE_LIB_JAIL_H
#define COVE_LIB_JAIL_H

#include "lib/base/cove_types.h"
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lib/base/cgroup.h"

#define JAIL_ROOT_DIR "root" /* in the sandbox's directory */

/* The range per-sandbox uids (and gids of the same number) come from when
 * root starts sandboxes: $COVE_JAIL_IDS="FIRST-LAST", else this. */
#define JAIL_IDS_FIRST 1900000000u
#define JAIL_IDS_COUNT 65536u

struct sandbox_jail {
	bool namespaces; /* clone3 into new PID, mount, IPC, UTS, net namespaces; --jail ROOT */
	bool userns;     /* and a user namespace (the launcher is not root) */
	bool ids;        /* a per-sandbox uid/gid (the launcher is root) */
	uid_t uid;
	char claim[PATH_MAX]; /* the uid's claim file, removed with the sandbox */
	int cgroup_fd;        /* -1: none */
	char cgroup[PATH_MAX];
	char note[320]; /* what was not applied, one line, or "" */
};

/* Decides the confinement of the sandbox name (registry entry dir, jail
 * root root), claims a uid (root) and hands it the jail root, and creates
 * the cgroup with l.  0, or -errno with err. */
int jail_prepare(struct sandbox_jail *j, const char *dir, const char *name, const char *root,
                 const struct cgroup_limits *l, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Claims a uid for the sandbox name (entry sbdir) in <base>/.ids/<uid>
 * (O_EXCL; a claim whose sandbox directory is gone is stale and taken
 * over): cove-vmm's, and cove-egress's second one.  The claim's path goes
 * into claim. */
int jail_claim_uid(const char *sbdir, const char *name, uid_t *uid, char *claim, size_t claimlen,
                   char *err, size_t errlen) __attribute__((warn_unused_result));

/* After a start where clone3 could not make a user namespace: from now
 * on the sandbox runs with seccomp and no_new_privs only. */
void jail_without_namespaces(struct sandbox_jail *j, int why);

/* One line: what confines the sandbox (for the start log and cove ls). */
void jail_describe(const struct sandbox_jail *j, char *out, size_t len);

/* Gives the jail's uid the socket at path (cove-vmm connects to it). */
int jail_give(const struct sandbox_jail *j, const char *path) __attribute__((warn_unused_result));

/* Releases the uid claim and removes the cgroup (after cove-vmm exited). */
void jail_release(struct sandbox_jail *j);

/* jail_release for a handle that did not prepare the jail (cove_open):
 * the claim naming the sandbox in dir's registry goes. */
void jail_release_named(const char *dir, const char *name);

/**
 * jail_dirfd_beneath() - a directory fd to hand a jailed process
 * @dfd:	the directory (open, not O_PATH)
 *
 * An fd of @dfd's directory walked from outside the process's root lets
 * it climb with ".." to the host's "/" (a chroot escape).  This one is
 * the root of a detached copy of the mount (open_tree OPEN_TREE_CLONE), so
 * ".." stops at the directory itself, whatever code holds it.  Renames
 * from another mount into it fail with EXDEV (callers copy instead).  The
 * copy goes away with the last fd.  Needs CAP_SYS_ADMIN (root).
 * Return: the new fd (O_RDONLY | O_DIRECTORY, close-on-exec) or -errno.
 */
int jail_dirfd_beneath(int dfd) __attribute__((warn_unused_result));

/* 0 when unprivileged user namespaces can be created here, else -errno
 * (for cove doctor). */
int jail_userns_probe(void);

/* ---- part of cove.h's API ---- */

/* One line: how a sandbox this process starts is confined (the jail,
 * docs/jail.md).  0 for the full jail, 1 for seccomp and
 * no_new_privs only, -EINVAL for a bad $COVE_JAIL_IDS (out holds why). */
int cove_confinement(char *out, size_t len);

#endif
