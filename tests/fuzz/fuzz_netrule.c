/* libFuzzer target: egress rules and policies as the CLI and the ctl socket
 * take them (common/netrule.c).  The input is a policy in JSON, or, when
 * it is not JSON, lines of rules.  A rule that parses prints canonically
 * and parses back to the same rule; a policy round-trips through JSON. */
#include <assert.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netrule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_rule(const char *s, bool deny)
{
	struct netrule r, r2;
	char err[256], t[NETRULE_TEXT_MAX + 8];
	if (netrule_parse(s, deny, &r, err, sizeof(err))) {
		assert(err[0] && !strchr(err, '\n'));
		return;
	}
	assert(netrule_format(&r, t, sizeof(t)) > 0);
	assert(netrule_parse(t, deny, &r2, err, sizeof(err)) == 0);
	assert(!memcmp(&r, &r2, sizeof(r)));
	struct netaddr a = r.addr;
	(void)netrule_match_addr(&r, &a, r.port_lo);
	(void)netrule_match_name(&r, r.name, r.port_lo);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	json_error_t je;
	json_t *j = json_loadb((const char *)data, size, 0, &je);
	if (j) {
		struct netpolicy p, p2;
		char err[320];
		if (netpolicy_from_json(j, &p, err, sizeof(err)) == 0) {
			json_t *o = netpolicy_to_json(&p);
			assert(o);
			assert(netpolicy_from_json(o, &p2, err, sizeof(err)) == 0);
			json_t *o2 = netpolicy_to_json(&p2);
			assert(json_equal(o, o2));
			json_decref(o);
			json_decref(o2);
			netpolicy_free(&p2);
			netpolicy_free(&p);
		}
		json_decref(j);
		return 0;
	}
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	char *save = NULL;
	for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		one_rule(l, false);
		one_rule(l, true);
	}
	free(s);
	return 0;
}
