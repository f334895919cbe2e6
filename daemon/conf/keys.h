/* coved's API keys file (docs/api.md, "Tenants"): which tenant each key
 * is; tenant names; constant-time secret compares. */
#ifndef COVED_CONF_KEYS_H
#define COVED_CONF_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#define COVED_KEYS_MAX   64
#define COVED_TENANT_LEN 64 /* tenant names: [A-Za-z0-9_.-], 1 to 64 */

struct coved_tenant;

/* One line of the API keys file: a key and the tenant it belongs to. */
struct coved_key {
	char *key;
	char tenant[COVED_TENANT_LEN + 1];
	struct coved_tenant *t; /* coved's tenant table entry (table.h); NULL in the parser */
};

/* coved_keys_load() - reads the API keys file (docs/api.md, "Tenants"):
 * one "TENANT:KEY" or bare "KEY" a line ('#' comments, blank lines
 * skipped).  A bare key is a tenant of its own, named "key-" and 12 hex
 * digits of the key's SHA-256.  -EPERM when the file is readable by group
 * or others, -EINVAL with the line number for a bad line.
 * Return: 0 with *keys (free with coved_keys_free), or -errno with err. */
int coved_keys_load(const char *path, struct coved_key **keys, size_t *n, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void coved_keys_free(struct coved_key *keys, size_t n);
/* coved_tenant_name_ok() - whether s[0..len) is a tenant name: 1 to 64 of
 * A-Z a-z 0-9 _ . -, not "." or ".." (names go into logs and records). */
bool coved_tenant_name_ok(const char *s, size_t len);
/* Constant-time string equality (time depends on b's length only). */
bool coved_secret_eq(const char *a, const char *b);

#endif
