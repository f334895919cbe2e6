/* coved's tenant names (docs/api.md, "Tenants"), shared by coved and by
 * `cove doctor`, which counts the tenants of coved's keys file. */
#ifndef COVED_TENANT_NAME_H
#define COVED_TENANT_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define COVED_TENANT_LEN 64 /* tenant names: [A-Za-z0-9_.-], 1 to 64 */

/* coved_tenant_name_ok() - whether s[0..len) is a tenant name: 1 to 64 of
 * A-Z a-z 0-9 _ . -, not "." or ".." (names go into logs and records). */
static inline bool coved_tenant_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > COVED_TENANT_LEN || (len <= 2 && strncmp(s, "..", len) == 0))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

#endif
