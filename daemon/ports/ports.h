/* A sandbox's TCP ports through coved (issue 32; docs/api.md "Ports"): a
 * request with E2b-Sandbox-Port (not envd's 49983), or for the host name
 * <port>-<id>.<domain>, goes to that port inside the sandbox over a new
 * agent connection (lib/agent/port.h: no NIC needed), and the answer
 * streams back; an upgrade (websockets) becomes a byte pipe both ways.
 * The server (daemon/server.c) asks ports_route() on a request's first
 * call and hands the request over when it is a port's. */
#ifndef COVED_PORTS_H
#define COVED_PORTS_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/http/relay.h"

struct coved;
struct coved_tenant;

/* Connecting to a guest port: the agent's own deadline on its connect. */
#define PORTS_CONNECT_MS 2000

enum ports_kind {
	PORTS_NONE,    /* not a sandbox's: the control plane or envd as before */
	PORTS_ENVD,    /* envd (49983) named by host name: id is its sandbox */
	PORTS_FORWARD, /* a port of a sandbox */
};

struct ports_route {
	enum ports_kind kind;
	uint16_t port;
	char id[RELAY_ID_MAX + 1];
	bool by_host; /* named by the Host header (else by E2b-Sandbox-*) */
};

/* ports_route() - what the request on c is for, from its Host (when the
 * config has a domain) and its E2b-Sandbox-Id and E2b-Sandbox-Port.
 * Return: 0 with *rt, or 400 with msg (a bad port value, a port without
 * a sandbox id, a Host and headers that name different sandboxes). */
int ports_route(const struct coved *d, struct MHD_Connection *c, struct ports_route *rt, char *msg,
                size_t len);

/* ports_handle() - the access handler's contract for a PORTS_FORWARD
 * request (every call of it; *cls is the room's own, NULL at first).
 * target: the request target as the client sent it (not decoded); t:
 * the tenant of the request's X-API-Key, NULL without one or for an
 * unknown one (key_sent then says whether one was sent). */
enum MHD_Result ports_handle(struct coved *d, const struct ports_route *rt, const char *target,
                             struct coved_tenant *t, bool key_sent, struct MHD_Connection *c,
                             const char *method, const char *upload_data, size_t *upload_data_size,
                             void **cls);

/* ports_request_done() - from the request-completed callback. */
void ports_request_done(void **cls);

/* ports_upgrades() - upgraded streams (websockets) open now. */
unsigned ports_upgrades(void);

/* ports_init() - before the server starts.  Return: 0 or -errno. */
int ports_init(struct coved *d) __attribute__((warn_unused_result));
/* ports_stop() - ends every upgraded stream and waits (at most 5 s) for
 * them to let go of their connections: before the server stops. */
void ports_stop(void);

#endif
