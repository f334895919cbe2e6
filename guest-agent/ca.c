#include "ca.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "file.h"
#include "io.h"

#define SYSTEM_MAX (8 << 20)

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static char *env_vars[AGENT_CA_ENV_MAX + 8];

size_t agent_ca_strip(char *text, size_t len)
{
	char *b;
	while ((b = memmem(text, len, AGENT_CA_BEGIN, strlen(AGENT_CA_BEGIN)))) {
		size_t off = (size_t)(b - text);
		char *e = memmem(b, len - off, AGENT_CA_END, strlen(AGENT_CA_END));
		size_t end = e ? (size_t)(e - text) + strlen(AGENT_CA_END) : len;
		memmove(b, text + end, len - end);
		len -= end - off;
	}
	return len;
}

static char *read_small(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *buf = malloc(max + 1);
	ssize_t n = buf ? read_full(fd, buf, max + 1) : -1;
	close(fd);
	if (n < 0 || (size_t)n > max) {
		free(buf);
		return NULL;
	}
	buf[n] = 0;
	*len = (size_t)n;
	return buf;
}

static bool pem_ok(const char *pem)
{
	static const char b[] = "-----BEGIN CERTIFICATE-----\n",
	                  e[] = "-----END CERTIFICATE-----\n";
	size_t n = strlen(pem);
	if (n < sizeof(b) + sizeof(e) || n > AGENT_CA_PEM_MAX || strncmp(pem, b, sizeof(b) - 1) ||
	    strcmp(pem + n - (sizeof(e) - 1), e))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((pem[i] < 0x20 && pem[i] != '\n') || pem[i] > 0x7e)
			return false;
	return !strstr(pem + 1, "-----BEGIN");
}

int agent_ca_install(const char *pem, const char *const *env, size_t nenv, const char *system,
                     const char *run_dir, bool *bundle, char *err, size_t errlen)
{
	*bundle = false;
	if (!pem_ok(pem))
		return errf(err, errlen, -EINVAL, "\"ca\" must be one PEM certificate");
	if (nenv > AGENT_CA_ENV_MAX)
		return errf(err, errlen, -EINVAL, "at most %d env variables", AGENT_CA_ENV_MAX);
	char ca[512], bpath[512];
	snprintf(ca, sizeof(ca), "%s/ca.pem", run_dir);
	snprintf(bpath, sizeof(bpath), "%s/ca-bundle.crt", run_dir);
	if (mkdir(run_dir, 0755) < 0 && errno != EEXIST)
		return errf(err, errlen, -errno, "%s: %s", run_dir, strerror(errno));
	size_t plen = strlen(pem);
	const char *one[] = { pem };
	size_t onel[] = { plen };
	int r = agent_write_file(ca, one, onel, 1);
	if (r)
		return errf(err, errlen, r, "%s: %s", ca, strerror(-r));
	size_t slen = 0;
	char *sys = read_small(system, SYSTEM_MAX, &slen);
	if (sys)
		slen = agent_ca_strip(sys, slen);
	bool nl = sys && slen && sys[slen - 1] != '\n';
	const char *parts[] = { sys ? sys : "", "\n", AGENT_CA_BEGIN, pem, AGENT_CA_END };
	size_t lens[] = { slen, nl ? 1 : 0, strlen(AGENT_CA_BEGIN), plen, strlen(AGENT_CA_END) };
	r = agent_write_file(bpath, parts, lens, 5);
	if (!r && sys) {
		/* Best effort: a read-only root keeps its bundle; the variables
		 * still name ours. */
		*bundle = agent_write_file(system, parts, lens, 5) == 0;
	}
	free(sys);
	if (r)
		return errf(err, errlen, r, "%s: %s", bpath, strerror(-r));
	char *vars[AGENT_CA_ENV_MAX + 8] = { 0 };
	size_t k = 0;
	static const char *const names[] = { "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
		                             "GIT_SSL_CAINFO" };
	bool fail = false;
	for (size_t i = 0; i < 3; i++)
		fail |= asprintf(&vars[k++], "%s=%s", names[i], bpath) < 0;
	fail |= asprintf(&vars[k++], "NODE_EXTRA_CA_CERTS=%s", ca) < 0;
	for (size_t i = 0; i < nenv; i++)
		fail |= !(vars[k++] = strdup(env[i]));
	if (fail) {
		for (size_t i = 0; i < k; i++)
			free(vars[i]);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	pthread_mutex_lock(&env_lock);
	for (size_t i = 0; env_vars[i]; i++) {
		free(env_vars[i]);
		env_vars[i] = NULL;
	}
	memcpy(env_vars, vars, sizeof(vars));
	pthread_mutex_unlock(&env_lock);
	return 0;
}

char **agent_ca_env(void)
{
	pthread_mutex_lock(&env_lock);
	size_t n = 0;
	while (env_vars[n])
		n++;
	char **out = n ? calloc(n + 1, sizeof(char *)) : NULL;
	for (size_t i = 0; out && i < n; i++)
		if (!(out[i] = strdup(env_vars[i]))) {
			agent_ca_env_free(out);
			out = NULL;
		}
	pthread_mutex_unlock(&env_lock);
	return out;
}

void agent_ca_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

static bool env_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 64 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

int agent_ca_apply(const json_t *o, bool *bundle, char *err, size_t errlen)
{
	*bundle = false;
	const char *pem = json_string_value(json_object_get(o, "ca"));
	json_t *env = json_object_get(o, "env");
	if (!pem || (env && !json_is_object(env)) || json_object_size(env) > AGENT_CA_ENV_MAX)
		return errf(err, errlen, -EINVAL,
		            "needs \"ca\" (PEM) and \"env\" (an object, optional)");
	char *vars[AGENT_CA_ENV_MAX];
	size_t n = 0;
	const char *k;
	json_t *v;
	int r = 0;
	json_object_foreach(env, k, v)
	{
		const char *s = json_string_value(v);
		if (!s || !env_name_ok(k) || strlen(s) != json_string_length(v)) {
			r = errf(err, errlen, -EINVAL, "a bad \"env\" entry");
			break;
		}
		if (asprintf(&vars[n], "%s=%s", k, s) < 0) {
			r = errf(err, errlen, -ENOMEM, "out of memory");
			break;
		}
		n++;
	}
	if (!r)
		r = agent_ca_install(pem, (const char *const *)vars, n, AGENT_CA_SYSTEM,
		                     "/run/cove", bundle, err, errlen);
	for (size_t i = 0; i < n; i++)
		free(vars[i]);
	if (!r)
		fprintf(stderr, "cove-agent: sandbox CA installed%s\n",
		        *bundle ? " (and in " AGENT_CA_SYSTEM ")" : "");
	return r;
}
