/* cove-egress as a process (net_egress.c): its files, spawn, maps,
 * config, readiness, stop. */
#ifndef COVE_NET_EGRESS_H
#define COVE_NET_EGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lib/base/cove_types.h"
#include "lib/base/sandbox_net.h"
#include "lib/net/net_addr.h"

/* cove-egress's share of the sandbox's cgroup (beside cove-vmm's). */
#define NET_EGRESS_MEMORY_MIB 64
#define NET_EGRESS_PIDS       16

/* How long cove-egress may take to say "ok", and to stop on SIGTERM. */
#define NET_EGRESS_READY_MS 10000
#define NET_EGRESS_TERM_MS  2000
#define NET_EGRESS_KILL_MS  2000

struct json_t;

#define EGRESS_LOG "egress.log" /* the decisions, one JSON line each */
#define EGRESS_ERR "egress.err" /* cove-egress's own stdout and stderr */

/* The fds cove-egress finds (config, ctl, log, ready, then publish). */
enum { FD_CONFIG = 3, FD_CTL, FD_LOG, FD_READY, FD_PUBLISH };

struct egress_plan {
	int exe;                      /* O_PATH of the binary */
	int fds[4 + NET_PUBLISH_MAX]; /* become FD_CONFIG, FD_CTL, ... */
	int nfds;
	int out; /* its stdout and stderr */
	int go;  /* it waits for a byte here */
	bool die_with_parent;
	int cgroup_fd;
};

/* The files cove-egress gets, into p (publish listeners bound here, in
 * the host's namespace; pub and *npub what they are); *ready_r the ready
 * pipe's reading end. */
int egress_files(const char *dir, const struct cove_config *cfg, struct egress_plan *p,
                 struct net_publish *pub, size_t *npub, int *ready_r, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void egress_plan_close(struct egress_plan *p);

/* Starts it (our child, or detached in a session of its own); it waits on
 * p->go.  Sets n's pid, pidfd and egress_child. */
int egress_spawn(struct egress_plan *p, bool detached, struct sandbox_net *n)
    __attribute__((warn_unused_result));

/* Its uid and gid maps: 0 inside is id outside. */
int egress_map(pid_t pid, uid_t id) __attribute__((warn_unused_result));

/* The upstream resolvers: cfg's, else $COVE_DNS_UPSTREAM, else
 * /etc/resolv.conf's (loopback skipped).  At most NET_DNS_MAX. */
int net_upstreams(const struct cove_config *cfg, struct net_upstream *up, size_t *n, char *err,
                  size_t errlen) __attribute__((warn_unused_result));

/* Its config (docs/network.md); NULL without memory. */
struct json_t *egress_config(unsigned int k, struct json_t *policy, const struct net_upstream *up,
                             size_t nup, const struct net_publish *pub, size_t npub);

/* Waits for "ok" on rfd within NET_EGRESS_READY_MS; its error line, or
 * errlog's last line when it died without one, in err. */
int egress_ready(struct sandbox_net *n, int rfd, const char *errlog, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Waits up to ms for it to exit (reaps our child); true when it did. */
bool egress_wait(struct sandbox_net *n, int ms);

/* SIGTERM, NET_EGRESS_TERM_MS, SIGKILL, NET_EGRESS_KILL_MS; closes the
 * pidfd.  A no-op without one. */
void egress_stop(struct sandbox_net *n);

#endif
