/* cove-egress's two halves (egress/nftd.h) each confine themselves: the
 * nft keeper once it holds the ctl listener, the parser once its sockets
 * are bound and NFLOG is open (both start as root of their own user
 * namespace, in the sandbox's network and mount namespaces).  The steps,
 * in order; each reports which one failed:
 *   1. mounts private, then pivot_root into an empty read-only tmpfs and
 *      detach the old root (nothing of the host's files stays reachable);
 *   2. capabilities: the keeper keeps CAP_NET_ADMIN alone (namespaced: it
 *      rules only this netns; set updates and policy changes need it), the
 *      parser none, both with the bounding set to match, ambient and
 *      inheritable cleared;
 *   3. no_new_privs;
 *   4. a seccomp allowlist (confine.c), default: kill the process.  Only
 *      the keeper may open a socket of netlink, and of NETLINK_NETFILTER
 *      alone; the parser only IPv4 ones (its NFLOG socket is open before,
 *      and without CAP_NET_ADMIN nfnetlink refuses anything it sends).
 * libnftables' cache and symbol tables, ldns and jansson's hash seed are
 * touched before (main.c), so nothing after needs a file. */
#ifndef COVE_EGRESS_CONFINE_H
#define COVE_EGRESS_CONFINE_H

#include <stddef.h>

enum confine_role {
	CONFINE_PARSER,
	CONFINE_KEEPER,
};

/* confine() - the steps above for @role.  @seccomp_log: log instead of
 * kill (for finding a missing syscall; COVE_EGRESS_SECCOMP=log).  0 or
 * -errno with @err naming the step. */
int confine(enum confine_role role, int seccomp_log, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
