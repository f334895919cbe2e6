/* What a create or a network change asks of the sandboxes, as typed
 * structs (the API's bodies parse into them, daemon/api/body.h), and the
 * network policy a request gives libcove.  Pure. */
#ifndef COVED_SANDBOXES_REQUEST_H
#define COVED_SANDBOXES_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COVED_TEMPLATE_LEN_MAX 64 /* bytes of a templateID */

struct cove_net_policy;

/* A network policy as E2B asks for it. */
struct coved_net {
	bool given;    /* any network field was present */
	bool internet; /* allow_internet_access (default true) */
	bool internet_given;
	json_t *allow_out, *deny_out; /* arrays of strings, or NULL */
	/* allowPublicTraffic (E2B's), apart from the egress fields: false
	 * gives the sandbox a traffic token its ports then need. */
	bool public_given, public_traffic;
};

struct coved_create {
	char template_id[COVED_TEMPLATE_LEN_MAX + 1];
	json_t *metadata;   /* object of strings, or NULL */
	json_t *env_vars;   /* object of strings, or NULL */
	uint64_t timeout_s; /* 0: not given */
	bool auto_pause, auto_pause_given;
	bool auto_resume, auto_resume_given; /* autoResume {"enabled"} */
	uint64_t idle_s;                     /* idleTimeout (a Cove extension); 0: not given */
	unsigned int cpus;                   /* 0: not given (Cove extension cpuCount) */
	uint64_t memory_mib;                 /* 0: not given (Cove extension memoryMB) */
	struct coved_net net;
	char placed_id[33]; /* cluster: the id the placing node reserved ("": a new one) */
};

void coved_create_free(struct coved_create *c);
void coved_net_free(struct coved_net *n);

/* coved_net_policy() - n as libcove's policy, straight from the request:
 * *allow and *deny (free both, also on failure) hold the rule strings p
 * points at, which n owns.  network_on: the config's "network".
 * Return: 0, or an HTTP status with msg (400: the config has no network
 * for what n asks; 500: out of memory). */
int coved_net_policy(const struct coved_net *n, bool network_on, struct cove_net_policy *p,
                     const char ***allow, const char ***deny, char *msg, size_t len);

/* coved_net_json() - n as the record and the API keep it:
 * {allow_internet_access?, allowOut?, denyOut?}, or NULL when not given. */
json_t *coved_net_json(const struct coved_net *n);

#endif
