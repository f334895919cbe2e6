/* libFuzzer target: coved's two files, the API keys file
 * (coved_keys_load) and the config (coved_config_load, its "tenants"
 * quotas, listener keys, per-node ranges and "cluster" object among
 * them), read from a file as coved reads them.  Whatever the bytes, a
 * load either fails with a message or gives keys, tenant names and a
 * cluster object within their bounds. */
#include <assert.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/conf/config.h"
#include "daemon/conf/keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void unlink_path(void)
{
	unlink(path);
}

/* The bytes in a 0600 file of this process's own, replaced each run. */
static const char *put(const uint8_t *data, size_t size)
{
	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/fuzz-coved-files.%d", (int)getpid());
		atexit(unlink_path);
	}
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert(fd >= 0);
	assert(write(fd, data, size) == (ssize_t)size);
	close(fd);
	return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *file = put(data, size);
	char err[600];
	struct coved_key *keys;
	size_t n;
	err[0] = 0;
	if (coved_keys_load(file, &keys, &n, err, sizeof(err)) == 0) {
		assert(n >= 1 && n <= COVED_KEYS_MAX);
		for (size_t i = 0; i < n; i++) {
			assert(keys[i].key && keys[i].key[0]);
			size_t tl = strlen(keys[i].tenant);
			assert(coved_tenant_name_ok(keys[i].tenant, tl));
		}
		coved_keys_free(keys, n);
	} else {
		assert(err[0]);
	}
	struct coved_config cfg;
	err[0] = 0;
	if (coved_config_load(file, &cfg, err, sizeof(err)) == 0) {
		assert(!cfg.tls_cert == !cfg.tls_key);
		assert(cfg.cpus <= cfg.max_cpus && cfg.memory_mib <= cfg.max_memory_mib);
		const struct coved_cluster_config *k = &cfg.cluster;
		assert(!k->on || (cfg.tcp && k->node_id && k->advertise && k->netcd >= 1 &&
		                  k->netcd <= COVED_CLUSTER_ETCD_MAX && k->lease_ttl_s >= 2 &&
		                  k->lease_ttl_s <= 300 && k->secret &&
		                  strlen(k->secret) >= COVED_CLUSTER_SECRET_MIN && k->cap_vcpus &&
		                  k->cap_memory_mib));
	} else {
		assert(err[0]);
	}
	coved_config_free(&cfg);
	return 0;
}
