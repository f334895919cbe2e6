/* libcove's side of credential injection (docs/credentials.md).  A rules file (common/proxyrule.h) is read and
 * validated in full, and every secret's value read from its 0600 file or
 * this process's environment, before anything starts or changes.  The
 * values go to cove-egress over its control socket only, and are wiped
 * here once sent.  The sandbox's directory (and a snapshot's) keeps
 * `proxy-rules.json`: the rules with their references and the secrets'
 * sources (absolute paths), never values, so a restore or fork reads the
 * values again.  The guest gets the sandbox CA's certificate and the rules'
 * dummy env_vars through PROTO_CA. */
#ifndef COVE_LIB_PROXY_H
#define COVE_LIB_PROXY_H

#include <stddef.h>

#include "lib/base/cove_types.h"

struct json_t;
struct cove_sandbox;

#define PROXY_RULES_FILE  "proxy-rules.json" /* in a sandbox's or snapshot's directory */
#define PROXY_RULES_LIMIT 49152              /* bytes of rules file (one ctl line) */
#define PROXY_CA_LIMIT    32768              /* bytes of upstream_ca */

struct proxy_load {
	struct json_t *rules;  /* the rules file, paths made absolute (kept) */
	struct json_t *values; /* {"NAME": "value"}: wiped by proxy_load_free */
	char *upstream_ca;     /* PEM text, or NULL: the host's trust store */
	struct json_t *env;    /* every rule's env_vars, first one wins */
};

/* proxy_load_file() - read @path and everything it names.  0, or -errno
 * (-EINVAL for bad input) with one line naming the file and the problem. */
int proxy_load_file(const char *path, struct proxy_load *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

void proxy_load_free(struct proxy_load *l);

/* proxy_send() - give @l to the cove-egress of the sandbox at @dir; its
 * CA certificate (PEM, malloc'd) into *@ca.  0 or -errno with @err. */
int proxy_send(const char *dir, const struct proxy_load *l, char **ca, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* proxy_store() - @l's rules (no values) into @dir/proxy-rules.json, 0600,
 * through a temporary file.  0 or -errno with @err. */
int proxy_store(const char *dir, const struct proxy_load *l, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* proxy_agent_ca() - PROTO_CA to @sb's agent: @ca and @env (may be NULL).
 * 0 or -errno with @err. */
int proxy_agent_ca(struct cove_sandbox *sb, const char *ca, struct json_t *env, char *err,
                   size_t errlen) __attribute__((warn_unused_result));

/* proxy_copy() - @from/proxy-rules.json to @to/ when it exists (0: none). */
int proxy_copy(const char *from, const char *to) __attribute__((warn_unused_result));

/* ---- part of cove.h's API ---- */

/* Replaces a running sandbox's credential rules (a rules file, read and
 * validated in full with its secrets first; nothing changes on an error):
 * cove-egress takes them for its next connection, the guest gets the
 * sandbox CA and the rules' env_vars, and the sandbox's directory the
 * rules (never values).  -EINVAL for bad input, -ENOTSUP without a network. */
int cove_net_proxy(struct cove_sandbox *sb, const char *rules_file, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
