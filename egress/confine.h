/* cove-egress confines itself once its sockets are bound, its table is
 * applied and NFLOG is open (it starts as root of its own user namespace,
 * in the sandbox's network and mount namespaces).  The steps, in order;
 * each reports which one failed:
 *   1. mounts private, then pivot_root into an empty read-only tmpfs and
 *      detach the old root (nothing of the host's files stays reachable);
 *   2. capabilities: every one dropped from the bounding set except
 *      CAP_NET_ADMIN (namespaced: it rules only this netns; set updates
 *      and policy changes need it), ambient and inheritable cleared;
 *   3. no_new_privs;
 *   4. a seccomp allowlist (below), default: kill the process.
 * libnftables' cache and symbol tables, ldns and jansson's hash seed are
 * touched before (main.c), so nothing after needs a file. */
#ifndef COVE_EGRESS_CONFINE_H
#define COVE_EGRESS_CONFINE_H

#include <stddef.h>

/* confine() - the steps above.  @seccomp_log: log instead of kill (for
 * finding a missing syscall; COVE_EGRESS_SECCOMP=log).  0 or -errno with
 * @err naming the step. */
int confine(int seccomp_log, char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
