/* libFuzzer target: a --proxy-rules file (common/proxyrule.c).  What it
 * accepts has rules with names and hosts, no forbidden header, and every
 * reference expands (with a value for every source) or says which name is
 * missing; matching never reads out of bounds. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proxyrule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_rules r;
	char err[300];
	if (proxy_rules_parse((const char *)data, size, &r, err, sizeof(err)))
		return 0;
	static struct proxy_secret s[PROXY_SECRETS_MAX];
	for (size_t i = 0; i < r.nsrc; i++) {
		strcpy(s[i].name, r.src[i].name);
		s[i].value = "v";
		s[i].len = 1;
	}
	static char out[PROXY_VALUE_MAX * 4];
	for (size_t i = 0; i < r.n; i++) {
		const struct proxy_rule *u = &r.rules[i];
		assert(u->name && u->nhosts > 0);
		for (size_t k = 0; k < u->nheaders; k++) {
			assert(!proxy_header_forbidden(u->headers[k].name,
			                               strlen(u->headers[k].name)));
			char miss[80];
			long n = proxy_expand(u->headers[k].value, s, r.nsrc, out, sizeof(out),
			                      miss, sizeof(miss));
			assert(n >= 0 || n == -E2BIG);
		}
		assert(u->schemes && !(u->schemes & ~(PROXY_SCHEME_HTTP | PROXY_SCHEME_HTTPS)));
		struct proxy_hdr h = { "x-account", "a", 9, 1 };
		const char *host = u->hosts[0][0] == '*' ? "a.b.test" : u->hosts[0];
		const struct proxy_rule *m =
		    proxy_rules_match(&r, host, true, "GET", "/v1/x?y", 7, &h, 1);
		assert(!m || (m->schemes & PROXY_SCHEME_HTTPS));
		m = proxy_rules_match(&r, host, false, "GET", "/v1/x?y", 7, &h, 1);
		assert(!m || (m->schemes & PROXY_SCHEME_HTTP));
	}
	proxy_rules_free(&r);
	return 0;
}
