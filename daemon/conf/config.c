/* coved's config file (JSON, every key known) and the tenants' quota
 * arithmetic. */
#include "daemon/conf/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cove.h"
#include "daemon/conf/keys.h"
#include "errf.h"

static void defaults(struct coved_config *c)
{
	memset(c, 0, sizeof(*c));
	c->socket = strdup("/run/coved/coved.sock");
	c->socket_group = strdup("cove");
	c->tcp = NULL;
	c->state_dir = strdup("/var/lib/coved");
	c->api_keys_file = strdup("/etc/coved/api-keys");
	c->default_image = strdup("minimal");
	c->templates = json_object();
	c->max_requests = 256;
	c->max_sandboxes = 128;
	c->max_creates = 64;
	c->max_body = 1 << 20;
	c->max_depth = 16;
	c->conn_timeout_s = 600;
	c->default_timeout_s = 300;
	c->max_timeout_s = 86400;
	c->on_timeout = COVED_ON_TIMEOUT_KILL;
	c->cpus = 1;
	c->max_cpus = 8;
	c->memory_mib = 256;
	c->max_memory_mib = 8192;
	c->network = true;
	c->boot_timeout_s = 60;
	c->metrics_auth = true;
	c->header_timeout_s = 10;
	c->max_connections_per_ip = 32;
	c->tenants = json_object();
	c->tenant_default = (struct coved_quota){ UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX };
}

void coved_config_free(struct coved_config *c)
{
	free(c->socket);
	free(c->socket_group);
	free(c->tcp);
	free(c->state_dir);
	free(c->api_keys_file);
	free(c->default_image);
	free(c->templates_dir);
	free(c->tls_cert);
	free(c->tls_key);
	json_decref(c->templates);
	json_decref(c->tenants);
	memset(c, 0, sizeof(*c));
}

static int set_str(json_t *v, const char *key, bool nullable, char **dst, char *err, size_t errlen)
{
	if (json_is_null(v) && nullable) {
		free(*dst);
		*dst = NULL;
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 4000)
		return errf(err, errlen, -EINVAL, "config key '%s' must be a non-empty string%s",
		            key, nullable ? " or null" : "");
	free(*dst);
	*dst = strdup(json_string_value(v));
	return *dst ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
}

static int set_uint(json_t *v, const char *key, uint64_t lo, uint64_t hi, uint64_t *dst, char *err,
                    size_t errlen)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < lo || (uint64_t)json_integer_value(v) > hi)
		return errf(err, errlen, -EINVAL,
		            "config key '%s' must be an integer from %llu to %llu", key,
		            (unsigned long long)lo, (unsigned long long)hi);
	*dst = (uint64_t)json_integer_value(v);
	return 0;
}

static int set_bool(json_t *v, const char *key, bool *dst, char *err, size_t errlen)
{
	if (!json_is_boolean(v))
		return errf(err, errlen, -EINVAL, "config key '%s' must be true or false", key);
	*dst = json_is_true(v);
	return 0;
}

/* One quota object: {"max_sandboxes": N, ...}, every key optional. */
static int parse_quota(json_t *v, const char *where, struct coved_quota *q, char *err,
                       size_t errlen)
{
	if (!json_is_object(v))
		return errf(err, errlen, -EINVAL, "config '%s' must be an object of max_ keys",
		            where);
	const char *k;
	json_t *x;
	json_object_foreach(v, k, x)
	{
		uint64_t *dst = !strcmp(k, "max_sandboxes")    ? &q->max_sandboxes
		                : !strcmp(k, "max_creates")    ? &q->max_creates
		                : !strcmp(k, "max_cpus")       ? &q->max_cpus
		                : !strcmp(k, "max_memory_mib") ? &q->max_memory_mib
		                                               : NULL;
		if (!dst)
			return errf(err, errlen, -EINVAL,
			            "config '%s': unknown key '%.64s' (max_sandboxes, max_creates, "
			            "max_cpus, max_memory_mib)",
			            where, k);
		if (!json_is_integer(x) || json_integer_value(x) < 0 ||
		    json_integer_value(x) > 100000000)
			return errf(err, errlen, -EINVAL,
			            "config '%s.%s' must be an integer from 0 to 100000000", where,
			            k);
		*dst = (uint64_t)json_integer_value(x);
	}
	return 0;
}

static int set_tenants(struct coved_config *c, json_t *v, char *err, size_t errlen)
{
	if (!json_is_object(v))
		return errf(err, errlen, -EINVAL,
		            "config key 'tenants' must be an object of tenant names");
	const char *k;
	json_t *x;
	json_object_foreach(v, k, x)
	{
		char where[96];
		struct coved_quota q;
		snprintf(where, sizeof(where), "tenants.%.64s", k);
		if (!coved_tenant_name_ok(k, strlen(k)))
			return errf(err, errlen, -EINVAL,
			            "config '%s': a tenant name is 1 to %d of A-Z a-z 0-9 _ . -",
			            where, COVED_TENANT_LEN);
		int r = parse_quota(x, where, &q, err, errlen);
		if (r < 0)
			return r;
	}
	json_decref(c->tenants);
	c->tenants = json_incref(v);
	return 0;
}

void coved_config_quota(const struct coved_config *cfg, const char *name, struct coved_quota *q)
{
	*q = cfg->tenant_default;
	json_t *v = json_object_get(cfg->tenants, name);
	if (v) {
		char e[8];
		/* Checked at load: cannot fail here. */
		(void)parse_quota(v, "tenants", q, e, sizeof(e));
	}
}

int coved_quota_check(const char *tenant, const struct coved_quota *q,
                      const struct coved_usage *used, const struct coved_usage *want, char *msg,
                      size_t len)
{
	static const char *const key[] = { "max_sandboxes", "max_creates", "max_cpus",
		                           "max_memory_mib" };
	static const char *const what[] = { "sandboxes", "creates in flight", "vCPUs",
		                            "MiB of memory" };
	const uint64_t lim[] = { q->max_sandboxes, q->max_creates, q->max_cpus, q->max_memory_mib };
	const uint64_t u[] = { used->sandboxes, used->creates, used->cpus, used->memory_mib };
	const uint64_t w[] = { want->sandboxes, want->creates, want->cpus, want->memory_mib };
	for (size_t i = 0; i < 4; i++)
		if (w[i] && (u[i] > lim[i] || w[i] > lim[i] - u[i]))
			return errf(msg, len, 429,
			            "tenant %s holds %llu of its %llu %s (%s): this request "
			            "needs %llu more",
			            tenant, (unsigned long long)u[i], (unsigned long long)lim[i],
			            what[i], key[i], (unsigned long long)w[i]);
	return 0;
}

static int apply(struct coved_config *c, const char *k, json_t *v, char *err, size_t errlen)
{
	uint64_t u;
	int r;
#define UINT(name, lo, hi, field)                                         \
	if (strcmp(k, name) == 0) {                                       \
		if ((r = set_uint(v, name, lo, hi, &u, err, errlen)) < 0) \
			return r;                                         \
		c->field = (__typeof__(c->field))u;                       \
		return 0;                                                 \
	}
	if (strcmp(k, "socket") == 0)
		return set_str(v, k, false, &c->socket, err, errlen);
	if (strcmp(k, "socket_group") == 0)
		return set_str(v, k, true, &c->socket_group, err, errlen);
	if (strcmp(k, "tcp") == 0)
		return set_str(v, k, true, &c->tcp, err, errlen);
	if (strcmp(k, "state_dir") == 0)
		return set_str(v, k, false, &c->state_dir, err, errlen);
	if (strcmp(k, "api_keys_file") == 0)
		return set_str(v, k, false, &c->api_keys_file, err, errlen);
	if (strcmp(k, "templates_dir") == 0) {
		c->templates_dir_set = true;
		return set_str(v, k, true, &c->templates_dir, err, errlen);
	}
	if (strcmp(k, "default_image") == 0)
		return set_str(v, k, false, &c->default_image, err, errlen);
	if (strcmp(k, "tls_cert") == 0)
		return set_str(v, k, true, &c->tls_cert, err, errlen);
	if (strcmp(k, "tls_key") == 0)
		return set_str(v, k, true, &c->tls_key, err, errlen);
	if (strcmp(k, "tenants") == 0)
		return set_tenants(c, v, err, errlen);
	if (strcmp(k, "tenant_defaults") == 0) {
		c->tenant_default =
		    (struct coved_quota){ UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX };
		return parse_quota(v, k, &c->tenant_default, err, errlen);
	}
	UINT("max_requests", 1, 100000, max_requests)
	UINT("max_sandboxes", 1, 100000, max_sandboxes)
	UINT("max_creates", 1, 10000, max_creates)
	UINT("max_body_bytes", 1024, (uint64_t)1 << 30, max_body)
	UINT("max_json_depth", 2, 256, max_depth)
	UINT("connection_timeout_s", 1, 86400, conn_timeout_s)
	UINT("header_timeout_s", 1, 3600, header_timeout_s)
	UINT("max_connections_per_ip", 1, 100000, max_connections_per_ip)
	UINT("default_timeout_s", 1, 31536000, default_timeout_s)
	UINT("max_timeout_s", 1, 31536000, max_timeout_s)
	UINT("cpus", 1, 64, cpus)
	UINT("max_cpus", 1, 64, max_cpus)
	UINT("memory_mib", 32, (uint64_t)1 << 20, memory_mib)
	UINT("max_memory_mib", 32, (uint64_t)1 << 20, max_memory_mib)
	UINT("disk_mib", 0, (uint64_t)1 << 24, disk_mib)
	UINT("boot_timeout_s", 1, 3600, boot_timeout_s)
	UINT("net_pool_size", 0, COVE_NET_POOL_MAX, net_pool_size)
	UINT("pool_size", 0, COVE_POOL_SIZE_MAX, pool_size)
	UINT("pool_cpus", 0, 64, pool_cpus)
#undef UINT
	if (strcmp(k, "network") == 0)
		return set_bool(v, k, &c->network, err, errlen);
	if (strcmp(k, "metrics_auth") == 0)
		return set_bool(v, k, &c->metrics_auth, err, errlen);
	if (strcmp(k, "on_timeout") == 0) {
		const char *s = json_string_value(v);
		if (s && strcmp(s, "kill") == 0)
			c->on_timeout = COVED_ON_TIMEOUT_KILL;
		else if (s && strcmp(s, "pause") == 0)
			c->on_timeout = COVED_ON_TIMEOUT_PAUSE;
		else
			return errf(err, errlen, -EINVAL,
			            "config key 'on_timeout' must be \"kill\" or \"pause\"");
		return 0;
	}
	if (strcmp(k, "templates") == 0) {
		if (!json_is_object(v))
			return errf(err, errlen, -EINVAL,
			            "config key 'templates' must be an object of image names");
		const char *tk;
		json_t *tv;
		json_object_foreach(v, tk, tv)
		{
			if (!json_is_string(tv))
				return errf(
				    err, errlen, -EINVAL,
				    "config 'templates.%.64s' must be an image name or path", tk);
		}
		json_decref(c->templates);
		c->templates = json_incref(v);
		return 0;
	}
	return errf(err, errlen, -EINVAL, "unknown config key '%.64s' (docs/api.md lists them)", k);
}

int coved_config_load(const char *path, struct coved_config *cfg, char *err, size_t errlen)
{
	defaults(cfg);
	if (!path) {
		if (asprintf(&cfg->templates_dir, "%s/templates", cfg->state_dir) < 0)
			cfg->templates_dir = NULL;
		return 0;
	}
	json_error_t je;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return errf(err, errlen, -EINVAL, "config %s: %s (line %d)", path, je.text,
		            je.line);
	int r = 0;
	if (!json_is_object(o)) {
		r = errf(err, errlen, -EINVAL, "config %s: must be a JSON object", path);
		goto out;
	}
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		char e2[400];
		if ((r = apply(cfg, k, v, e2, sizeof(e2))) < 0) {
			errf(err, errlen, r, "config %s: %s", path, e2);
			goto out;
		}
	}
	/* Templates live beside the sandboxes' state unless told otherwise. */
	if (!cfg->templates_dir_set &&
	    asprintf(&cfg->templates_dir, "%s/templates", cfg->state_dir) < 0)
		cfg->templates_dir = NULL;
	if (!cfg->tls_cert != !cfg->tls_key)
		r = errf(err, errlen, -EINVAL, "config %s: tls_cert and tls_key go together", path);
	else if (cfg->cpus > cfg->max_cpus || cfg->memory_mib > cfg->max_memory_mib ||
	         cfg->default_timeout_s > cfg->max_timeout_s)
		r = errf(
		    err, errlen, -EINVAL,
		    "config %s: a default (cpus, memory_mib, default_timeout_s) is above its max_",
		    path);
out:
	json_decref(o);
	return r;
}
