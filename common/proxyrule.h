/* Credential-injection rules (issue 15): the `--proxy-rules FILE.json`
 * format, shared by libcove (which validates the file and reads the
 * secrets' values before anything starts) and cove-egress (which matches
 * requests and injects headers).  A rules file is hostile input: every
 * field is checked, unknown keys are errors (tests/fuzz/fuzz_proxyrule.c).
 *
 *   {"secrets": {"TOKEN": {"file": "/path/0600-file"} | {"env": "VAR"}},
 *    "upstream_ca": "/path/ca.pem",                   (optional, for tests)
 *    "rules": [{"name": "api",
 *               "match_hosts": ["api.test", "*.example.com"],
 *               "match_paths": ["/v1/", "/v2/ *"],     (optional; no space)
 *               "match_methods": ["GET"],             (optional)
 *               "match_headers": {"X-Account": "a"},  (optional)
 *               "schemes": ["https", "http"],         (optional; ["https"])
 *               "headers": {"Authorization": "Bearer {{secrets.TOKEN}}"},
 *               "env_vars": {"GH_TOKEN": "dummy"}}]}  (optional)
 *
 * Rules are evaluated in order; the first whose every match_* holds, over
 * a scheme in its "schemes", wins.  Paths are matched as cove-egress
 * normalised them (egress/httppath.h), globs with FNM_PATHNAME ('*' stays
 * within a segment).  A secret goes over plain HTTP only where a rule says
 * "http" in "schemes".
 * The file holds references and where values come from, never values. */
#ifndef COVE_PROXYRULE_H
#define COVE_PROXYRULE_H

#include <stdbool.h>
#include <stddef.h>

#define PROXY_RULES_MAX   32
#define PROXY_LIST_MAX    16 /* hosts, paths, methods, headers, env vars per rule */
#define PROXY_SECRETS_MAX 32
#define PROXY_NAME_MAX    64   /* rule, secret, header and env var names */
#define PROXY_VALUE_MAX   4096 /* a header template, a secret's value, an env value */
#define PROXY_PATH_MAX    1024 /* a match_paths entry, a file path */
#define PROXY_FILE_MAX    (1 << 20)

#define PROXY_SCHEME_HTTPS 1u
#define PROXY_SCHEME_HTTP  2u

struct proxy_kv {
	char *name;
	char *value;
};

struct proxy_rule {
	char *name;
	char **hosts; /* lower case; "*.NAME" matches names below NAME */
	size_t nhosts;
	unsigned schemes; /* PROXY_SCHEME_* */
	char **paths;     /* with '*', '?' or '[': a glob (fnmatch); else a prefix */
	size_t npaths;
	char **methods; /* upper case */
	size_t nmethods;
	struct proxy_kv *match; /* header name (any case) and exact value */
	size_t nmatch;
	struct proxy_kv *headers; /* injected; the value may hold {{secrets.NAME}} */
	size_t nheaders;
	struct proxy_kv *env; /* dummy values for the guest */
	size_t nenv;
};

struct proxy_source {
	char *name;
	char *file; /* a 0600 file, or NULL */
	char *env;  /* the launcher's environment variable, or NULL */
};

struct proxy_rules {
	struct proxy_rule *rules;
	size_t n;
	struct proxy_source *src;
	size_t nsrc;
	char *upstream_ca; /* a CA file the proxy trusts for upstreams, or NULL */
};

/* A secret's value, held by cove-egress (and by libcove on its way there). */
struct proxy_secret {
	char name[PROXY_NAME_MAX + 1];
	char *value; /* NUL-terminated, len bytes; wiped on free */
	size_t len;
};

/* One header of a request, borrowed from the parser's buffer. */
struct proxy_hdr {
	const char *name, *value;
	size_t nlen, vlen;
};

/* proxy_rules_parse() - a rules file's text into @out: every rule has a
 * name (unique) and hosts; header names are tokens and none is a
 * hop-by-hop or framing header (Host, Content-Length, Transfer-Encoding,
 * Connection, Keep-Alive, Proxy-*, Upgrade, TE, Trailer); every
 * {{secrets.NAME}} names a key of "secrets"; values have no control bytes.
 * Return: 0, or -EINVAL with one line in @err (nothing to free). */
int proxy_rules_parse(const char *text, size_t len, struct proxy_rules *out, char *err,
                      size_t errlen) __attribute__((warn_unused_result));

void proxy_rules_free(struct proxy_rules *r);

/* proxy_host_match() - does pattern @pat ("NAME" or "*.NAME") cover @host
 * (normalized)? */
bool proxy_host_match(const char *pat, const char *host);

/* proxy_rules_for_host() - the first rule one of whose hosts covers @host,
 * or NULL: the proxy intercepts only such hosts. */
const struct proxy_rule *proxy_rules_for_host(const struct proxy_rules *r, const char *host);

/* proxy_rules_match() - the first rule matching the request (@tls: over
 * https, else http; @path up to any '?', already normalised; @method,
 * @hdrs), or NULL. */
const struct proxy_rule *proxy_rules_match(const struct proxy_rules *r, const char *host, bool tls,
                                           const char *method, const char *path, size_t pathlen,
                                           const struct proxy_hdr *hdrs, size_t nhdrs);

/* proxy_expand() - template @tmpl with each {{secrets.NAME}} replaced by
 * its value from @s.  Return: the length written to @out (NUL-terminated),
 * -ENOENT (the unknown name in @missing), or -E2BIG. */
long proxy_expand(const char *tmpl, const struct proxy_secret *s, size_t ns, char *out,
                  size_t outlen, char *missing, size_t mlen);

/* proxy_secret_value_ok() - a value fit for a header: 1..PROXY_VALUE_MAX
 * bytes, no control bytes but tab. */
bool proxy_secret_value_ok(const char *v, size_t len);

/* proxy_header_forbidden() - a header no rule may inject (see above). */
bool proxy_header_forbidden(const char *name, size_t len);

void proxy_secrets_free(struct proxy_secret *s, size_t n);

#endif
