/* The limits a create or resume meets: coved's own, then the tenant's
 * quota; and the timeouts the config allows (limits.h). */
#include "daemon/sandboxes/limits.h"

#include <string.h>

#include "daemon/sandboxes/metrics.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "errf.h"

/* What tenant t holds: its running and paused sandboxes and what its
 * creates in flight will add.  Called with d->mu held. */
static void tenant_usage(struct coved *d, const struct coved_tenant *t, struct coved_usage *u)
{
	*u = t->inflight;
	for (struct coved_sb *sb = d->list; sb; sb = sb->next) {
		if (strcmp(sb->tenant, t->name) != 0 ||
		    (sb->state != COVED_SB_RUNNING && sb->state != COVED_SB_PAUSED))
			continue;
		u->sandboxes++;
		u->cpus += sb->cpus;
		u->memory_mib += sb->memory_mib;
	}
}

bool coved_limit_ok(struct coved *d, struct coved_tenant *t, const struct coved_usage *want,
                    char *msg, size_t len)
{
	if (want->sandboxes && coved_sb_count_live(d) >= d->cfg.max_sandboxes) {
		coved_metric_bump(d, &d->m.limit_sandboxes);
		errf(msg, len, 429, "coved holds its maximum of %u sandboxes (max_sandboxes)",
		     d->cfg.max_sandboxes);
		return false;
	}
	if (atomic_fetch_add(&d->creating, 1) >= d->cfg.max_creates) {
		atomic_fetch_sub(&d->creating, 1);
		coved_metric_bump(d, &d->m.limit_creates);
		errf(msg, len, 429, "%u sandboxes are being created already (max_creates)",
		     d->cfg.max_creates);
		return false;
	}
	if (!t)
		return true;
	pthread_mutex_lock(&d->mu);
	struct coved_usage u;
	tenant_usage(d, t, &u);
	int st = coved_quota_check(t->name, &t->q, &u, want, msg, len);
	if (st == 0) {
		t->inflight.sandboxes += want->sandboxes;
		t->inflight.creates += want->creates;
		t->inflight.cpus += want->cpus;
		t->inflight.memory_mib += want->memory_mib;
	}
	pthread_mutex_unlock(&d->mu);
	if (st) {
		atomic_fetch_sub(&d->creating, 1);
		coved_metric_bump(d, &d->m.limit_tenant);
		return false;
	}
	return true;
}

void coved_limit_release(struct coved *d, struct coved_tenant *t, const struct coved_usage *want)
{
	if (!t)
		return;
	pthread_mutex_lock(&d->mu);
	t->inflight.sandboxes -= want->sandboxes;
	t->inflight.creates -= want->creates;
	t->inflight.cpus -= want->cpus;
	t->inflight.memory_mib -= want->memory_mib;
	pthread_mutex_unlock(&d->mu);
}

uint64_t coved_timeout_clamp(struct coved *d, uint64_t t)
{
	if (t == 0)
		t = d->cfg.default_timeout_s;
	return t > d->cfg.max_timeout_s ? d->cfg.max_timeout_s : t;
}
