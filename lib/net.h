/* libcove's side of a sandbox's network (docs/ARCHITECTURE.md, "The
 * network"): the index K and the addresses it gives, the sandbox's own
 * network namespace with its TAP and veth (rtnetlink through libmnl),
 * the host's nftables table `inet cove`, and cove-egress, the process
 * that owns that namespace and enforces the policy.
 *
 *   net_addr.c   the pure parts: addresses from K, the option syntaxes
 *                (rules, publish, dns, limits), the policy's JSON
 *   net_link.c   rtnetlink requests: links, addresses, routes, the veth
 *   net_nft.c    the host table, ip_forward
 *   net_egress.c cove-egress as a process: its files, spawn, maps, config,
 *                readiness, stop
 *   net.c        set-up and teardown in order, a dead sandbox's leftovers
 *   net_ctl.c    cove_net_set (the control socket), cove doctor's line
 * net.h sees nothing of libcove.h: these take a sandbox's names and
 * struct sandbox_net, not its handle (net_ctl.c is the one that does). */
#ifndef COVE_LIB_NET_H
#define COVE_LIB_NET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cove.h"

struct json_t;

/* The topology every sandbox (and every fork of one snapshot) has. */
#define NET_GUEST_ADDR "172.16.0.2"
#define NET_GUEST_MAC  "06:00:ac:10:00:02" /* cove-vmm's default; tap0 takes no other */
#define NET_GW_ADDR    "172.16.0.1"
#define NET_TAP_PREFIX 30
#define NET_TAP_NAME   "tap0"
#define NET_TAP_MAC    "06:00:ac:10:00:01"
#define NET_UPLINK     "up0"
#define NET_HOST_LINK  "cv" /* + K */
#define NET_CMDLINE    "cove.net=" NET_GUEST_ADDR "/30," NET_GW_ADDR "," NET_GW_ADDR
#define NET_INDEX_MAX  16383 /* K in 0..16383: 100.100.0.0/16 in /30s */
#define NET_TAP_FD     3     /* cove-vmm's --net fd=3 */

/* cove-egress's share of the sandbox's cgroup (beside cove-vmm's). */
#define NET_EGRESS_MEMORY_MIB 64
#define NET_EGRESS_PIDS       16

/* How long cove-egress may take to say "ok", and to stop on SIGTERM. */
#define NET_EGRESS_READY_MS 10000
#define NET_EGRESS_TERM_MS  2000
#define NET_EGRESS_KILL_MS  2000

#define NET_PUBLISH_MAX 32
#define NET_DNS_MAX     8

/* ---- net_addr.c: pure ---------------------------------------------------- */

/* The host end (100.100.0.0 + 4K + 1) and the namespace end (+ 2) of
 * sandbox K's /30, as host-order IPv4 addresses. */
uint32_t net_host_end(unsigned int k);
uint32_t net_ns_end(unsigned int k);
/* Dotted quad of a host-order address into out (16 bytes). */
void net_ntoa(uint32_t addr, char *out);

/* One rule's syntax (allow: IP, CIDR, CIDR:PORT, CIDR:LO-HI, NAME,
 * *.NAME, NAME:PORT; deny: the CIDR forms only).  0, or -EINVAL with a
 * line naming the rule and what is wrong with it. */
int net_rule_check(const char *rule, bool deny, char *err, size_t errlen)
    __attribute__((warn_unused_result));

struct net_publish {
	uint32_t addr; /* host order; 127.0.0.1 by default */
	uint16_t host_port, guest_port;
};
/* "[ADDR:]HOSTPORT:GUESTPORT" (ports 1-65535, ADDR an IPv4 address). */
int net_publish_parse(const char *spec, struct net_publish *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

struct net_upstream {
	uint32_t addr; /* host order */
	uint16_t port; /* 53 by default */
};
/* "IP[:PORT]" (IPv4). */
int net_dns_parse(const char *spec, struct net_upstream *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The nameservers of a resolv.conf text, loopback ones (127/8) and IPv6
 * skipped; at most max.  Returns how many. */
size_t net_resolv_conf(const char *text, struct net_upstream *out, size_t max);

/* cove-vmm's --net limits: comma-separated KEY=N with KEY one of rx_bps,
 * tx_bps, rx_pps, tx_pps and their _burst forms, N a positive decimal. */
int net_limits_check(const char *spec, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The whole of a configuration's network options: the mode, every rule,
 * publish, dns and limits spec (boot: options without a mode are an
 * error; a restore takes the snapshot's mode).  0 or -EINVAL with one
 * line. */
int net_check_config(const struct cove_config *cfg, bool boot, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* {"mode": ..., "allow": [...], "deny": [...]} of a policy (NULL when out
 * of memory or mode is COVE_NET_OFF). */
struct json_t *net_policy_json(const struct cove_net_policy *p);

/* ---- net_link.c: rtnetlink ----------------------------------------------- */

struct mnl_socket;

/* A NETLINK_ROUTE socket in the calling thread's network namespace, with
 * a receive deadline. */
struct mnl_socket *nl_open(void);

/* Sets link ifname up (and its MAC when mac is not NULL). */
int nl_link_up(struct mnl_socket *nl, const char *ifname, const unsigned char *mac);
/* Adds an IPv4 address addr/prefix (host order) to ifname. */
int nl_addr_add(struct mnl_socket *nl, const char *ifname, uint32_t addr, unsigned int prefix);
/* Adds the default route via gw (host order). */
int nl_route_default(struct mnl_socket *nl, uint32_t gw);
/* Creates the veth pair host (here) / peer (moved into the namespace
 * nsfd). */
int nl_veth_add(struct mnl_socket *nl, const char *host, const char *peer, int nsfd);
/* Deletes link ifname; 0 also when there is none. */
int nl_link_del(struct mnl_socket *nl, const char *ifname);

/* ---- net_nft.c: the host's side ------------------------------------------ */

/* Ensures the host table `inet cove` (masquerade of 100.100.0.0/16 out of
 * non-cv* links; from cv* only IPv4 from the link's own /30, never to
 * another cv* or an always-denied range but the upstreams; no input from
 * cv* but replies and DNS to the upstreams given) in one transaction, and
 * ip_forward=1.
 * The transaction is skipped when the record file (<base>/.net.host)
 * names this very table (boot id and handle) with every upstream given
 * already in it. */
int net_host_rules(const char *record, const struct net_upstream *up, size_t nup, char *err,
                   size_t errlen) __attribute__((warn_unused_result));

/* net_host_rules_text() - the transaction net_host_rules makes (pure; the
 * unit test's golden substrings).  Return: a malloc'd string or NULL. */
char *net_host_rules_text(const struct net_upstream *up, size_t nup);

/* nf_tables usable here (a dry-run transaction): 0 or -errno with why. */
int net_nft_probe(char *err, size_t errlen);

/* ---- net.c: set-up and teardown ------------------------------------------ */

/* A sandbox's network while libcove sets it up or tears it down. */
struct sandbox_net {
	bool on;
	unsigned int index;
	char claim[PATH_MAX];     /* <base>/.net/<K> */
	uid_t uid;                /* cove-egress's jail uid */
	char uid_claim[PATH_MAX]; /* its claim in <base>/.ids */
	int tap_fd;               /* for cove-vmm (fd 3); -1 once handed over */
	pid_t egress_pid;
	int egress_pidfd;
	uint64_t egress_start;
	bool egress_child; /* our child: reaped by us */
	char limits[256];
	/* Between net_setup and net_finish (cove-vmm boots meanwhile): */
	bool pending;              /* the three fds below are ours */
	int ready_fd, nsfd, go_fd; /* cove-egress's ready pipe, its netns, its go */
	struct net_upstream up[NET_DNS_MAX];
	size_t nup;
	char errlog[PATH_MAX]; /* <entry>/egress.err */
	/* Taken from a pool: its policy request sent, the answer for net_finish. */
	bool policy_pending;
	int policy_fd;
};

/* net_pool.c: takes a ready slot of pool p for the sandbox name (entry
 * dir, cgroup cgroup_fd or -1) with the given policy and net limits, as
 * net_setup and net_finish would leave it.  -EAGAIN when the pool cannot
 * serve it (empty, or cfg asks what a slot cannot give; err may then say
 * why): the caller calls net_setup. */
int net_pool_take(struct cove_net_pool *p, const struct cove_config *cfg, const char *dir,
                  const char *name, int cgroup_fd, struct json_t *policy, const char *limits,
                  struct sandbox_net *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Sets the network of the sandbox name (entry dir, cgroup cgroup_fd or
 * -1) up: K, the egress uid, cove-egress in its namespaces and the
 * cgroup, tap0, the veth; returns once cove-egress has its config, while
 * it applies its rules.  policy: the JSON object; cfg's publish and dns
 * specs (checked), detached and egress.  On failure everything is undone.
 * Forwarding in the sandbox's namespace stays off until net_finish: the
 * guest can boot meanwhile, and nothing it sends leaves. */
int net_setup(struct sandbox_net *n, const char *dir, const char *name, int cgroup_fd,
              const struct cove_config *cfg, struct json_t *policy, const char *limits, char *err,
              size_t errlen) __attribute__((warn_unused_result));

/* The rest, once cove-vmm is spawned: the host rules, cove-egress's "ok"
 * (its rules are in place), then forwarding on in the sandbox's namespace.
 * 0 (also without a pending set-up), or -errno with one line in err; the
 * caller then tears the sandbox down. */
int net_finish(struct sandbox_net *n, char *err, size_t errlen) __attribute__((warn_unused_result));

/* Stops cove-egress (through its pidfd) and, with release, removes the
 * host link and releases K and the uid; without (the entry was cleaned
 * and its name taken again meanwhile) K is left to whoever holds it now.
 * After cove-vmm is gone (it holds the TAP, which keeps the namespace).
 * For a handle from cove_open (n from meta.json) as well. */
void net_teardown(struct sandbox_net *n, const char *name, bool release);

/* The leftovers of a sandbox found dead (its record m, entry base/name
 * already removed): cove-egress (when it still runs and is one), the host
 * link and the claim. */
struct registry_meta;
void net_clean_dead(const char *base, const struct registry_meta *m);

/* ---- net_egress.c: cove-egress as a process ------------------------------ */

/* net_ctl_call() - one request line to cove-egress's control socket
 * @sock, one answer line back (at most 4 KiB), within 5 s; an answer
 * without "ok":true is -EIO with its error.  0 or -errno with @err. */
int net_ctl_call(const char *sock, struct json_t *req, struct json_t **reply, char *err,
                 size_t errlen) __attribute__((warn_unused_result));
/* net_ctl_call in two halves: the request sent (a connected socket in
 * *fd), then its answer read (within the same limit from then; the fd is
 * closed).  net_pool_take sends a new policy and net_finish reads the
 * answer, so cove-egress applies it while cove-vmm starts. */
int net_ctl_send(const char *sock, struct json_t *req, int *fd, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int net_ctl_reply(int fd, const char *sock, struct json_t **reply, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#define EGRESS_SOCK "egress.sock" /* in the entry: the control socket */
#define EGRESS_LOG  "egress.log"  /* the decisions, one JSON line each */
#define EGRESS_ERR  "egress.err"  /* cove-egress's own stdout and stderr */

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

/* Its config (docs/ARCHITECTURE.md, "The network"); NULL without memory. */
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
