/* A spliced TCP connection pair (proxy and publish): two sockets, one
 * bounded buffer each way, half-closes passed on, an idle deadline, and
 * one log line with the bytes each way when it ends.  The owner fills the
 * first bytes to send (conn_queue) and calls conn_splice once connected. */
#ifndef COVE_EGRESS_CONN_H
#define COVE_EGRESS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress.h"

#define CONN_BUF        16384
#define CONN_CANDIDATES 8 /* resolved addresses tried in turn */

struct upq;
struct mitm;

struct conn_dir {
	uint8_t buf[CONN_BUF];
	size_t off, len;
	bool eof;  /* the source ended */
	bool shut; /* and the destination was told */
	uint64_t bytes;
};

enum conn_state { CONN_HEAD, CONN_RESOLVE, CONN_CONNECT, CONN_SPLICE };

struct conn {
	struct egress *e;
	struct loop_dead dead;
	bool dying;
	bool logged; /* a refusal already wrote its line */
	enum conn_state st;
	const char *via; /* "proxy" or "publish" */
	bool tls;
	uint16_t port; /* the server's port (80, 443, or the guest's) */
	struct ev a;   /* the accepted side (guest, or host client for publish) */
	struct ev b;   /* the dialled side */
	struct timer t;
	struct upq *uq;
	uint8_t head[16384]; /* what the proxy read before deciding */
	size_t headlen;
	char name[NETRULE_NAME_MAX + 1];
	char rule[NETRULE_TEXT_MAX + 8];
	struct netaddr dst;
	bool have_dst;
	struct netaddr cand[CONN_CANDIDATES];
	size_t ncand, icand;
	struct conn_dir up;   /* a -> b */
	struct conn_dir down; /* b -> a */
	/* Intercepted (egress/mitm.c, which sets these), or NULL: spliced. */
	struct mitm *m;
	void (*m_start)(struct conn *c); /* instead of the splice, once connected */
	void (*m_free)(struct mitm *m);
};

/* conn_new() - a connection around accepted @fd (nonblocking), counted
 * against EGRESS_CONNS_MAX.  NULL (and @fd closed with a reset) when at
 * the cap or out of memory. */
struct conn *conn_new(struct egress *e, int fd, const char *via);

/* conn_dial() - connect b to @dst:@port (nonblocking), with the connect
 * deadline; conn_splice() follows by itself.  Logs and closes on failure
 * after trying the remaining candidates. */
void conn_dial(struct conn *c);

/* conn_close() - end it: log (allowed connections only, with bytes),
 * close both, free after this batch.  @reset: close a with SO_LINGER 0. */
void conn_close(struct conn *c, bool reset);

#endif
