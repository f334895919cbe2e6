/* coved's VMM pool (docs/api.md "Configuration", pool_size and pool_cpus):
 * libcove's struct cove_vmm_pool, made at start-up and ended at exit.
 * Creates, resumes and forks of sandboxes without a network take a member
 * through cove_config.vmm_pool; its members end when coved does (they exit
 * when the pool's connections close, also when coved is killed). */
#include "daemon/sandboxes/pool.h"

#include <stdio.h>
#include <stdlib.h>

#include "cove.h"
#include "daemon/sandboxes/state.h"
#include "errf.h"

int coved_pool_start(struct coved *d, char *err, size_t errlen)
{
	if (!d->cfg.pool_size)
		return 0;
	struct cove_config dc;
	cove_config_defaults(&dc);
	struct cove_vmm_pool_opts o = { .vmm = dc.vmm, .size = d->cfg.pool_size, .nshapes = 1 };
	o.cpus[0] = d->cfg.pool_cpus ? d->cfg.pool_cpus : d->cfg.cpus;
	return cove_vmm_pool_new(&o, &d->pool, err, errlen);
}

void coved_pool_stop(struct coved *d)
{
	cove_vmm_pool_free(d->pool);
	d->pool = NULL;
}

void coved_pool_metrics(struct coved *d, FILE *f)
{
	struct cove_vmm_pool_stats s;
	cove_vmm_pool_stats(d->pool, &s);
	fprintf(f,
	        "# HELP coved_pool_size Pre-spawned VMMs kept ready (pool_size).\n"
	        "# TYPE coved_pool_size gauge\ncoved_pool_size %u\n"
	        "# HELP coved_pool_ready Pre-spawned VMMs ready now.\n"
	        "# TYPE coved_pool_ready gauge\ncoved_pool_ready %u\n",
	        d->pool ? s.size : 0, s.ready);
	fprintf(f,
	        "# HELP coved_pool_hits_total Starts served by a pre-spawned VMM.\n"
	        "# TYPE coved_pool_hits_total counter\ncoved_pool_hits_total %llu\n"
	        "# HELP coved_pool_misses_total Starts that found no ready VMM of their shape.\n"
	        "# TYPE coved_pool_misses_total counter\ncoved_pool_misses_total %llu\n"
	        "# HELP coved_pool_spawned_total Pre-spawned VMMs started.\n"
	        "# TYPE coved_pool_spawned_total counter\ncoved_pool_spawned_total %llu\n"
	        "# HELP coved_pool_failed_total Pre-spawned VMMs that failed to come up.\n"
	        "# TYPE coved_pool_failed_total counter\ncoved_pool_failed_total %llu\n",
	        (unsigned long long)s.hits, (unsigned long long)s.misses,
	        (unsigned long long)s.spawned, (unsigned long long)s.failed);
}
