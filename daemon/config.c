/* coved's config file (JSON, every key known) and its API keys file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "coved_priv.h"
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
	json_decref(c->templates);
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
	UINT("max_requests", 1, 100000, max_requests)
	UINT("max_sandboxes", 1, 100000, max_sandboxes)
	UINT("max_creates", 1, 10000, max_creates)
	UINT("max_body_bytes", 1024, (uint64_t)1 << 30, max_body)
	UINT("max_json_depth", 2, 256, max_depth)
	UINT("connection_timeout_s", 1, 86400, conn_timeout_s)
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
	if (cfg->cpus > cfg->max_cpus || cfg->memory_mib > cfg->max_memory_mib ||
	    cfg->default_timeout_s > cfg->max_timeout_s)
		r = errf(
		    err, errlen, -EINVAL,
		    "config %s: a default (cpus, memory_mib, default_timeout_s) is above its max_",
		    path);
out:
	json_decref(o);
	return r;
}

int coved_keys_load(const char *path, char ***keys, size_t *n, char *err, size_t errlen)
{
	*keys = NULL;
	*n = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "API keys file %s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return errf(err, errlen, -EINVAL, "API keys file %s is not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return errf(err, errlen, -EPERM,
		            "API keys file %s is readable by others (mode %03o): chmod 600 it",
		            path, (unsigned)(st.st_mode & 0777));
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	char **list = calloc(COVED_KEYS_MAX + 1, sizeof(*list));
	char line[512];
	int r = 0;
	while (list && fgets(line, sizeof(line), f)) {
		size_t l = strcspn(line, "\r\n");
		line[l] = 0;
		if (l == 0 || line[0] == '#')
			continue;
		if (l < 16) {
			r = errf(err, errlen, -EINVAL,
			         "API keys file %s: a key is shorter than 16 bytes", path);
			break;
		}
		if (*n == COVED_KEYS_MAX) {
			r = errf(err, errlen, -EINVAL, "API keys file %s: more than %d keys", path,
			         COVED_KEYS_MAX);
			break;
		}
		list[(*n)++] = strdup(line);
	}
	explicit_bzero(line, sizeof(line));
	fclose(f);
	if (!list)
		return errf(err, errlen, -ENOMEM, "out of memory");
	if (r == 0 && *n == 0)
		r = errf(err, errlen, -EINVAL, "API keys file %s holds no key", path);
	if (r < 0) {
		for (size_t i = 0; i < *n; i++)
			free(list[i]);
		free(list);
		*n = 0;
		return r;
	}
	*keys = list;
	return 0;
}

bool coved_secret_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	volatile unsigned char diff = la != lb;
	for (size_t i = 0; i < lb; i++)
		diff |= (unsigned char)(b[i] ^ (i < la ? a[i] : 0));
	return diff == 0;
}
