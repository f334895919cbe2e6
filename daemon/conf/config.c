/* coved's config file (JSON, every key known) and the tenants' quota
 * arithmetic. */
#include "daemon/conf/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "daemon/conf/keys.h"
#include "errf.h"
#include "io.h"
#include "lib/base/registry.h"
#include "lib/net/net_addr.h"

/* The longest runtime_dir: libcove's entries <dir>/<name> must fit. */
#define RUNTIME_DIR_MAX (REGISTRY_DIR_MAX - REGISTRY_NAME_MAX - 2)

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
	c->warm_pool = json_object();
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
	c->max_builds = 2;
	c->build_timeout_s = 1800;
	c->max_upload = (uint64_t)1 << 30;
	c->metrics_auth = true;
	c->header_timeout_s = 10;
	c->port_idle_s = 600;
	c->ports_public = true;
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
	free(c->domain);
	json_decref(c->templates);
	json_decref(c->warm_pool);
	json_decref(c->tenants);
	free(c->runtime_dir);
	free(c->cgroup_parent);
	free(c->jail_ids);
	free(c->net_indexes);
	free(c->otlp_endpoint);
	if (c->otlp_headers)
		explicit_bzero(c->otlp_headers, strlen(c->otlp_headers));
	free(c->otlp_headers);
	free(c->otlp_service_name);
	free(c->otlp_sampler);
	struct coved_cluster_config *k = &c->cluster;
	for (size_t i = 0; i < k->netcd; i++)
		free(k->etcd[i]);
	free(k->etcd);
	free(k->node_id);
	free(k->advertise);
	if (k->secret)
		explicit_bzero(k->secret, strlen(k->secret));
	free(k->secret);
	free(k->shared_snapshot_dir);
	memset(c, 0, sizeof(*c));
}

/* domain_valid() - a DNS name in lower case: labels of 1-63 bytes of
 * [a-z0-9-], at most 200 bytes, no leading or trailing dot. */
static bool domain_valid(const char *d)
{
	size_t n = d ? strlen(d) : 0;
	if (n == 0 || n > 200 || d[0] == '.' || d[n - 1] == '.')
		return false;
	size_t label = 0;
	for (size_t i = 0; i < n; i++) {
		char c = d[i];
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return false;
		if (++label > 63)
			return false;
	}
	return true;
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

/* v's text when it is a string without a NUL in it, else NULL. */
static const char *str_of(json_t *v)
{
	const char *s = json_string_value(v);
	return s && strlen(s) == json_string_length(v) ? s : NULL;
}

/* v for an error line: a string quoted, else its JSON, cut short. */
static const char *shown(json_t *v, char *out, size_t len)
{
	if (json_is_string(v)) {
		snprintf(out, len, "'%.64s'", json_string_value(v));
		return out;
	}
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	snprintf(out, len, "%.64s", s ? s : "?");
	free(s);
	return out;
}

/* "FIRST-LAST": two decimals from lo to hi, FIRST <= LAST, nothing else. */
static bool range_ok(const char *s, uint64_t lo, uint64_t hi)
{
	uint64_t v[2];
	for (int i = 0; i < 2; i++) {
		size_t n = 0;
		v[i] = 0;
		while (n < 10 && s[n] >= '0' && s[n] <= '9')
			v[i] = v[i] * 10 + (uint64_t)(s[n++] - '0');
		if (n == 0 || v[i] < lo || v[i] > hi || s[n] != (i ? 0 : '-'))
			return false;
		s += n + 1;
	}
	return v[0] <= v[1];
}

/* A "FIRST-LAST" key (jail_ids, net_indexes), or null: not given. */
static int set_range(json_t *v, const char *key, uint64_t lo, uint64_t hi, char **dst, char *err,
                     size_t errlen)
{
	char got[80];
	if (!json_is_null(v) && (!json_is_string(v) || !range_ok(json_string_value(v), lo, hi)))
		return errf(err, errlen, -EINVAL,
		            "config key '%s' must be \"FIRST-LAST\" with %llu <= FIRST <= LAST "
		            "<= %llu, got %s",
		            key, (unsigned long long)lo, (unsigned long long)hi,
		            shown(v, got, sizeof(got)));
	return set_str(v, key, true, dst, err, errlen);
}

/* An absolute path of at most max bytes, or null when nullable. */
static int set_path(json_t *v, const char *key, size_t max, bool nullable, char **dst, char *err,
                    size_t errlen)
{
	char got[80];
	const char *s = str_of(v);
	if (!(json_is_null(v) && nullable) && (!s || s[0] != '/' || strlen(s) > max))
		return errf(
		    err, errlen, -EINVAL,
		    "config key '%s' must be an absolute path of at most %zu bytes%s, got %s", key,
		    max, nullable ? " or null" : "", shown(v, got, sizeof(got)));
	return set_str(v, key, nullable, dst, err, errlen);
}

int coved_config_setenv(const struct coved_config *c, char *err, size_t errlen)
{
	const struct {
		const char *name, *value;
	} env[] = {
		{ "COVE_RUNTIME_DIR", c->runtime_dir },
		{ "COVE_CGROUP_PARENT", c->cgroup_parent },
		{ "COVE_JAIL_IDS", c->jail_ids },
		{ "COVE_NET_INDEXES", c->net_indexes },
	};
	for (size_t i = 0; i < sizeof(env) / sizeof(env[0]); i++)
		if (env[i].value && setenv(env[i].name, env[i].value, 1) < 0)
			return errf(err, errlen, -errno, "cannot set %s: %s", env[i].name,
			            strerror(errno));
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

/* ---- the "cluster" object ---------------------------------------------- */

/* "http://HOST[:PORT]" or "https://...": HOST a name, an IPv4 or an [IPv6]
 * address; the port (1-65535) required with need_port; no path. */
static bool url_ok(const char *s, bool need_port)
{
	const char *h = !strncmp(s, "http://", 7)    ? s + 7
	                : !strncmp(s, "https://", 8) ? s + 8
	                                             : NULL;
	if (!h || strlen(s) > 255)
		return false;
	const char *p = h;
	if (*p == '[') {
		while (*++p && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
		                (*p >= 'A' && *p <= 'F') || *p == ':' || *p == '.'))
			;
		if (*p++ != ']' || p == h + 2)
			return false;
	} else {
		while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		       (*p >= '0' && *p <= '9') || *p == '.' || *p == '-')
			p++;
		if (p == h)
			return false;
	}
	if (!*p)
		return !need_port;
	if (*p++ != ':')
		return false;
	unsigned long port = 0;
	size_t d = 0;
	for (; d < 5 && *p >= '0' && *p <= '9'; d++)
		port = port * 10 + (unsigned long)(*p++ - '0');
	return d && !*p && port >= 1 && port <= 65535;
}

/* A node id: 1 to COVED_CLUSTER_ID_MAX of a-z 0-9 -. */
static bool node_id_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n < 1 || n > COVED_CLUSTER_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return false;
	return true;
}

static int set_etcd(struct coved_cluster_config *k, json_t *v, char *err, size_t errlen)
{
	size_t n = json_array_size(v);
	bool ok = json_is_array(v) && n >= 1 && n <= COVED_CLUSTER_ETCD_MAX;
	for (size_t i = 0; ok && i < n; i++) {
		const char *u = str_of(json_array_get(v, i));
		ok = u && url_ok(u, false);
		for (size_t j = 0; ok && j < i; j++)
			ok = strcmp(u, json_string_value(json_array_get(v, j))) != 0;
	}
	char got[80];
	if (!ok)
		return errf(err, errlen, -EINVAL,
		            "config key 'cluster.etcd' must be an array of 1 to %d distinct URLs "
		            "http(s)://HOST[:PORT] without a path, got %s",
		            COVED_CLUSTER_ETCD_MAX, shown(v, got, sizeof(got)));
	k->etcd = calloc(n, sizeof(*k->etcd));
	for (size_t i = 0; k->etcd && i < n; i++) {
		if (!(k->etcd[i] = strdup(json_string_value(json_array_get(v, i)))))
			break;
		k->netcd++;
	}
	return k->netcd == n ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
}

static int set_capacity(struct coved_cluster_config *k, json_t *v, char *err, size_t errlen)
{
	if (!json_is_object(v))
		return errf(err, errlen, -EINVAL,
		            "config key 'cluster.capacity' must be an object {\"vcpus\": N, "
		            "\"memory_mib\": N}");
	const char *key;
	json_t *x;
	json_object_foreach(v, key, x)
	{
		int r =
		    !strcmp(key, "vcpus") ? set_uint(x, "cluster.capacity.vcpus", 1, 65536,
		                                     &k->cap_vcpus, err, errlen)
		    : !strcmp(key, "memory_mib")
		        ? set_uint(x, "cluster.capacity.memory_mib", 32, (uint64_t)1 << 32,
		                   &k->cap_memory_mib, err, errlen)
		        : errf(err, errlen, -EINVAL,
		               "unknown config key 'cluster.capacity.%.64s' (vcpus, memory_mib)",
		               key);
		if (r < 0)
			return r;
	}
	return 0;
}

/* What capacity does not give: the online CPUs, 9/10 of MemTotal. */
static int host_capacity(struct coved_cluster_config *k, char *err, size_t errlen)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (!k->cap_vcpus && cpus < 1)
		return errf(
		    err, errlen, -EIO,
		    "cannot count the online CPUs: give config key 'cluster.capacity.vcpus'");
	if (!k->cap_vcpus)
		k->cap_vcpus = (uint64_t)cpus;
	if (k->cap_memory_mib)
		return 0;
	unsigned long long kb = 0;
	char line[160];
	FILE *f = fopen("/proc/meminfo", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (kb < 1024 || kb > (1ULL << 50))
		return errf(err, errlen, -EIO,
		            "cannot read MemTotal in /proc/meminfo: give config key "
		            "'cluster.capacity.memory_mib'");
	k->cap_memory_mib = kb * 9 / 10 / 1024;
	return 0;
}

/* The cluster secret: secret_file's one line, its newline stripped.  The
 * file is refused when group or others may read it (as the API keys
 * file); its text never goes into err. */
static int read_secret(const char *path, char **out, char *err, size_t errlen)
{
	size_t len = 0;
	struct stat st;
	int e;
	char *buf = file_slurp(path, COVED_CLUSTER_SECRET_MAX + 2, &len, &st, &e);
	if (!buf)
		return errf(err, errlen, -e, "config key 'cluster.secret_file': %s: %s", path,
		            e == EINVAL  ? "not a regular file"
		            : e == EFBIG ? "longer than one line of a secret"
		                         : strerror(e));
	const size_t size = len;
	const char *why = NULL;
	if (len && buf[len - 1] == '\n')
		buf[--len] = 0;
	if (len && buf[len - 1] == '\r')
		buf[--len] = 0;
	for (size_t i = 0; i < len && !why; i++)
		if ((unsigned char)buf[i] <= ' ' || (unsigned char)buf[i] >= 0x7f)
			why = "holds more than one line, a space or a byte that is not printable "
			      "ASCII";
	if (!why && len < COVED_CLUSTER_SECRET_MIN)
		why = "is shorter than 32 bytes";
	else if (!why && len > COVED_CLUSTER_SECRET_MAX)
		why = "is longer than 1024 bytes";
	int r = 0;
	if (st.st_mode & 077)
		r = errf(err, errlen, -EPERM,
		         "config key 'cluster.secret_file': %s is readable by others (mode %03o): "
		         "chmod 600 it",
		         path, (unsigned)(st.st_mode & 0777));
	else if (why)
		r = errf(err, errlen, -EINVAL, "config key 'cluster.secret_file': %s %s", path,
		         why);
	if (r < 0) {
		explicit_bzero(buf, size);
		free(buf);
		return r;
	}
	*out = buf;
	return 0;
}

/* One key of "cluster"; the secret file's path into *secret_file. */
static int cluster_key(struct coved_cluster_config *k, const char *key, json_t *x,
                       char **secret_file, char *err, size_t errlen)
{
	char got[80];
	uint64_t u;
	int r;
	if (!strcmp(key, "etcd"))
		return set_etcd(k, x, err, errlen);
	if (!strcmp(key, "node_id"))
		return node_id_ok(str_of(x))
		           ? set_str(x, "cluster.node_id", false, &k->node_id, err, errlen)
		           : errf(err, errlen, -EINVAL,
		                  "config key 'cluster.node_id' must be 1 to %d of a-z 0-9 -, got "
		                  "%s",
		                  COVED_CLUSTER_ID_MAX, shown(x, got, sizeof(got)));
	if (!strcmp(key, "advertise"))
		return str_of(x) && url_ok(str_of(x), true)
		           ? set_str(x, "cluster.advertise", false, &k->advertise, err, errlen)
		           : errf(err, errlen, -EINVAL,
		                  "config key 'cluster.advertise' must be http(s)://HOST:PORT "
		                  "without a path, got %s",
		                  shown(x, got, sizeof(got)));
	if (!strcmp(key, "lease_ttl_s")) {
		if ((r = set_uint(x, "cluster.lease_ttl_s", 2, 300, &u, err, errlen)) == 0)
			k->lease_ttl_s = (unsigned)u;
		return r;
	}
	if (!strcmp(key, "secret_file"))
		return set_str(x, "cluster.secret_file", false, secret_file, err, errlen);
	if (!strcmp(key, "capacity"))
		return set_capacity(k, x, err, errlen);
	if (!strcmp(key, "shared_snapshot_dir"))
		return set_path(x, "cluster.shared_snapshot_dir", 4000, true,
		                &k->shared_snapshot_dir, err, errlen);
	return errf(err, errlen, -EINVAL,
	            "unknown config key 'cluster.%.64s' (etcd, node_id, advertise, lease_ttl_s, "
	            "secret_file, capacity, shared_snapshot_dir)",
	            key);
}

static int set_cluster(struct coved_cluster_config *k, json_t *v, char *err, size_t errlen)
{
	if (!json_is_object(v))
		return errf(err, errlen, -EINVAL,
		            "config key 'cluster' must be an object (docs/api.md, \"Cluster\")");
	k->on = true;
	k->lease_ttl_s = 10;
	char *secret_file = NULL;
	const char *key;
	json_t *x;
	int r = 0;
	json_object_foreach(v, key, x)
	{
		if ((r = cluster_key(k, key, x, &secret_file, err, errlen)) < 0)
			break;
	}
	const char *missing = !k->netcd       ? "etcd"
	                      : !k->node_id   ? "node_id"
	                      : !k->advertise ? "advertise"
	                      : !secret_file  ? "secret_file"
	                                      : NULL;
	if (r == 0 && missing)
		r = errf(err, errlen, -EINVAL,
		         "config key 'cluster.%s' is missing (\"cluster\" needs etcd, node_id, "
		         "advertise and secret_file)",
		         missing);
	if (r == 0)
		r = read_secret(secret_file, &k->secret, err, errlen);
	if (r == 0)
		r = host_capacity(k, err, errlen);
	free(secret_file);
	return r;
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
	if (strcmp(k, "domain") == 0) {
		if ((r = set_str(v, k, true, &c->domain, err, errlen)) < 0)
			return r;
		if (c->domain && !domain_valid(c->domain))
			return errf(
			    err, errlen, -EINVAL,
			    "config key 'domain' must be a lower-case DNS name (\"cove.example\")");
		return 0;
	}
	if (strcmp(k, "tenants") == 0)
		return set_tenants(c, v, err, errlen);
	if (strcmp(k, "otlp_endpoint") == 0)
		return set_str(v, k, true, &c->otlp_endpoint, err, errlen);
	if (strcmp(k, "otlp_headers") == 0)
		return set_str(v, k, true, &c->otlp_headers, err, errlen);
	if (strcmp(k, "otlp_service_name") == 0)
		return set_str(v, k, true, &c->otlp_service_name, err, errlen);
	if (strcmp(k, "otlp_sampler") == 0)
		return set_str(v, k, true, &c->otlp_sampler, err, errlen);
	if (strcmp(k, "runtime_dir") == 0)
		return set_path(v, k, RUNTIME_DIR_MAX, true, &c->runtime_dir, err, errlen);
	if (strcmp(k, "cgroup_parent") == 0)
		return set_path(v, k, 4000, true, &c->cgroup_parent, err, errlen);
	/* The bounds libcove takes (lib/base/jail.c, lib/net/net_addr.c). */
	if (strcmp(k, "jail_ids") == 0)
		return set_range(v, k, 1, 4294967294ULL, &c->jail_ids, err, errlen);
	if (strcmp(k, "net_indexes") == 0)
		return set_range(v, k, 0, NET_INDEX_MAX, &c->net_indexes, err, errlen);
	if (strcmp(k, "cluster") == 0)
		return set_cluster(&c->cluster, v, err, errlen);
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
	UINT("port_idle_timeout_s", 1, 86400, port_idle_s)
	UINT("max_connections_per_ip", 1, 100000, max_connections_per_ip)
	UINT("default_timeout_s", 1, 31536000, default_timeout_s)
	UINT("max_timeout_s", 1, 31536000, max_timeout_s)
	UINT("idle_timeout_s", 0, 31536000, idle_timeout_s)
	UINT("cpus", 1, 64, cpus)
	UINT("max_cpus", 1, 64, max_cpus)
	UINT("memory_mib", 32, (uint64_t)1 << 20, memory_mib)
	UINT("max_memory_mib", 32, (uint64_t)1 << 20, max_memory_mib)
	UINT("disk_mib", 0, (uint64_t)1 << 24, disk_mib)
	UINT("boot_timeout_s", 1, 3600, boot_timeout_s)
	UINT("max_template_builds", 0, 64, max_builds)
	UINT("template_build_timeout_s", 60, 86400, build_timeout_s)
	UINT("max_upload_bytes", 1024, (uint64_t)1 << 40, max_upload)
	UINT("net_pool_size", 0, COVE_NET_POOL_MAX, net_pool_size)
	UINT("pool_size", 0, COVE_POOL_SIZE_MAX, pool_size)
	UINT("pool_cpus", 0, 64, pool_cpus)
#undef UINT
	if (strcmp(k, "network") == 0)
		return set_bool(v, k, &c->network, err, errlen);
	if (strcmp(k, "metrics_auth") == 0)
		return set_bool(v, k, &c->metrics_auth, err, errlen);
	if (strcmp(k, "ports_public") == 0)
		return set_bool(v, k, &c->ports_public, err, errlen);
	if (strcmp(k, "webhook_private_ok") == 0)
		return set_bool(v, k, &c->webhook_private_ok, err, errlen);
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
	if (strcmp(k, "warm_pool") == 0) {
		if (!json_is_object(v))
			return errf(
			    err, errlen, -EINVAL,
			    "config key 'warm_pool' must be an object of templateID: count");
		const char *tk;
		json_t *tv;
		json_object_foreach(v, tk, tv)
		{
			if (!tk[0] || strlen(tk) > 64)
				return errf(err, errlen, -EINVAL,
				            "config 'warm_pool': a templateID is 1 to 64 bytes");
			if (!json_is_integer(tv) || json_integer_value(tv) < 0 ||
			    json_integer_value(tv) > COVED_WARM_MAX)
				return errf(err, errlen, -EINVAL,
				            "config 'warm_pool.%.64s' must be a count from 0 to %d",
				            tk, COVED_WARM_MAX);
		}
		json_decref(c->warm_pool);
		c->warm_pool = json_incref(v);
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
	else if (cfg->cluster.on && !cfg->tcp)
		r = errf(err, errlen, -EINVAL,
		         "config %s: \"cluster\" needs \"tcp\", the listener other nodes reach "
		         "this coved at (cluster.advertise)",
		         path);
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
