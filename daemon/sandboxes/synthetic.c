/* Synthetic sandboxes, a test mode (synthetic.h). */
#include "daemon/sandboxes/synthetic.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"

#define DAY_MS (24 * 3600 * 1000LL)

int coved_synthetic_parse(const char *text, size_t *n, char *err, size_t errlen)
{
	char *end;
	errno = 0;
	unsigned long long v = text && *text >= '0' && *text <= '9' ? strtoull(text, &end, 10) : 0;
	if (!v || errno || *end || v > COVED_SYNTHETIC_MAX)
		return errf(err, errlen, -EINVAL,
		            "COVED_TEST_SYNTHETIC_SANDBOXES must be 1 to %d, got '%.32s'",
		            COVED_SYNTHETIC_MAX, text ? text : "");
	*n = (size_t)v;
	return 0;
}

int coved_synthetic_add(struct coved *d, size_t n, const char *tenant, char *err, size_t errlen)
{
	if (!d->ntenants)
		return errf(err, errlen, -EINVAL, "synthetic sandboxes: no tenant");
	struct coved_tenant *t = tenant ? coved_tenant_find(d, tenant) : &d->tenants[0];
	if (!t)
		return errf(err, errlen, -EINVAL, "synthetic sandboxes: no tenant '%.64s'", tenant);
	int64_t now = wall_ms();
	for (size_t i = 0; i < n; i++) {
		struct coved_sb *sb = coved_sb_new(d);
		char num[24];
		snprintf(num, sizeof(num), "%zu", i);
		if (!sb || coved_new_id(sb->id) < 0 || coved_new_token(sb->token) < 0 ||
		    !(sb->template_id = strdup("synthetic")) ||
		    !(sb->image = strdup("synthetic")) ||
		    json_object_set_new(sb->metadata, "synthetic", json_string(num)) < 0) {
			coved_sb_unref(sb);
			return errf(err, errlen, -ENOMEM, "synthetic sandboxes: out of memory");
		}
		snprintf(sb->tenant, sizeof(sb->tenant), "%s", t->name);
		snprintf(sb->state_why, sizeof(sb->state_why), "requested");
		sb->state = COVED_SB_PAUSED;
		sb->started_ms = now - (int64_t)i * 1000;
		sb->end_ms = now + DAY_MS;
		sb->cpus = 1;
		sb->memory_mib = 128;
		coved_sb_list_add(d, sb);
		coved_sb_unref(sb); /* the list holds its own */
	}
	return 0;
}
