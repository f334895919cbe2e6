/* cove-egress's state: one process per sandbox, one of these per process,
 * shared by its modules (resolver, proxy, publish, ctl, nflog).  Single
 * event thread: nothing here is locked.  Types and limits only: each
 * module's functions are in its own header. */
#ifndef COVE_EGRESS_EGRESS_H
#define COVE_EGRESS_EGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "loop.h"
#include "netrule.h"
#include "pins.h"
#include "proxyrule.h"
#include "tlsca.h"

#define EGRESS_CONNS_MAX   256    /* proxy + publish connections */
#define EGRESS_DNS_TCP_MAX 32     /* guest DNS-over-TCP connections */
#define EGRESS_UPQ_MAX     128    /* upstream queries in flight */
#define EGRESS_HEAD_MS     10000  /* to read a ClientHello or request head */
#define EGRESS_CONNECT_MS  10000  /* to connect to a server or the guest */
#define EGRESS_IDLE_MS     300000 /* a splice with no bytes either way */
#define EGRESS_UPSTREAM_MS 1500   /* per upstream try */
#define EGRESS_DNS_TCP_MS  10000  /* a guest's DNS-over-TCP connection */
#define EGRESS_CTL_MS      5000   /* a ctl client's request line */

struct nft_ctx;
struct nflog_handle;

struct egress;

/* A publish listener (inherited from libcove, in the host's netns). */
struct egress_pub {
	struct ev ev;
	struct egress *e;
	uint16_t guest_port;
};

struct egress {
	struct loop loop;
	struct egress_config cfg;
	struct netpolicy policy; /* the policy in force (starts as cfg.policy) */
	struct nft_ctx *nft;
	struct pins pins;
	unsigned nconns, ndns_tcp, nupq, nctl;
	struct ev dns_udp, dns_tcp, http, tls, ctl, sig;
	struct egress_pub publish[EGRESS_PUBLISH_MAX];
	struct nflog_handle *nflog;
	struct ev nflog_ev;
	/* Credential injection (egress/mitm.c): the rules and secrets in
	 * force (ctl "proxy"), the sandbox CA and TLS contexts. */
	struct proxy_rules rules;
	struct proxy_secret *secrets;
	size_t nsecrets;
	struct tlsca ca;
	bool tls_ok; /* tlsca_init succeeded */
	/* The privilege split (egress/nftd.h): this process's end of the
	 * rpc and push pairs; in the keeper, nft, pins and ctl are the ones
	 * that count, in the parser the rest. */
	bool keeper;
	bool keeper_gone; /* parser: the keeper closed its end (exit 1) */
	int keeper_pid;   /* parser: the keeper's pid */
	int nftd_rpc, nftd_push;
	uint32_t nftd_seq;
	struct ev rpc_ev, push_ev;
};

#endif
