#include "lib/proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "lib/agent/agent_client.h"
#include "lib/agent/conn.h"
#include "lib/base/handle.h"
#include "lib/base/registry.h"
#include "lib/net/egress_ctl.h"
#include "proto.h"
#include "proxyrule.h"

/* A small regular file, whole.  Returns its bytes (NUL-terminated). */
/* @p relative to the rules file's directory @base, made absolute. */
static int absolute(const char *base, const char *p, char *out, size_t len)
{
	char joined[PATH_MAX];
	if (p[0] == '/')
		snprintf(joined, sizeof(joined), "%s", p);
	else if (snprintf(joined, sizeof(joined), "%s/%s", base, p) >= (int)sizeof(joined))
		return -ENAMETOOLONG;
	if (!realpath(joined, out))
		return -errno;
	(void)len;
	return 0;
}

void proxy_load_free(struct proxy_load *l)
{
	if (l->values) {
		const char *k;
		json_t *v;
		json_object_foreach(l->values, k, v)
		{
			explicit_bzero((char *)json_string_value(v), json_string_length(v));
		}
	}
	json_decref(l->values);
	json_decref(l->rules);
	json_decref(l->env);
	free(l->upstream_ca);
	memset(l, 0, sizeof(*l));
}

static int read_secret(const struct proxy_source *s, const char *base, json_t *rules_secrets,
                       json_t *values, const char *path, char *err, size_t errlen)
{
	char *val = NULL;
	size_t len = 0;
	if (s->env) {
		const char *v = getenv(s->env);
		if (!v)
			return errf(err, errlen, -EINVAL,
			            "%s: secret '%s': the environment has no %s", path, s->name,
			            s->env);
		len = strlen(v);
		val = strdup(v);
	} else {
		char abs[PATH_MAX];
		int r = absolute(base, s->file, abs, sizeof(abs));
		if (r)
			return errf(err, errlen, r == -ENOENT ? -EINVAL : r,
			            "%s: secret '%s': %s: %s", path, s->name, s->file,
			            strerror(-r));
		struct stat st;
		int e;
		val = file_slurp(abs, PROXY_VALUE_MAX + 2, &len, &st, &e);
		if (!val)
			return errf(err, errlen, -EINVAL, "%s: secret '%s': %s: %s", path, s->name,
			            abs, e == EFBIG ? "too large" : strerror(e));
		if (st.st_mode & 077) {
			explicit_bzero(val, len);
			free(val);
			return errf(
			    err, errlen, -EINVAL,
			    "%s: secret '%s': %s is readable by others (mode %03o; chmod 600 "
			    "it)",
			    path, s->name, abs, (unsigned)(st.st_mode & 0777));
		}
		/* A file's one trailing newline is no part of the value. */
		if (len && val[len - 1] == '\n')
			val[--len] = 0;
		if (len && val[len - 1] == '\r')
			val[--len] = 0;
		json_object_set_new(json_object_get(rules_secrets, s->name), "file",
		                    json_string(abs));
	}
	if (!val)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = 0;
	if (!proxy_secret_value_ok(val, len) || strlen(val) != len)
		r = errf(err, errlen, -EINVAL,
		         "%s: secret '%s' is empty, over %d bytes or holds control bytes", path,
		         s->name, PROXY_VALUE_MAX);
	else
		json_object_set_new(values, s->name, json_stringn(val, len));
	explicit_bzero(val, len);
	free(val);
	return r;
}

int proxy_load_file(const char *path, struct proxy_load *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	struct stat st;
	size_t len = 0;
	int e;
	char *text = file_slurp(path, PROXY_RULES_LIMIT, &len, &st, &e);
	if (!text)
		return errf(err, errlen, -EINVAL, "--proxy-rules %s: %s", path,
		            e == EFBIG ? "over 48 KiB" : strerror(e));
	char why[400];
	struct proxy_rules rs;
	int r = proxy_rules_parse(text, len, &rs, why, sizeof(why));
	if (r) {
		free(text);
		return errf(err, errlen, -EINVAL, "--proxy-rules %s: %s", path, why);
	}
	char dirbuf[PATH_MAX], base[PATH_MAX];
	snprintf(dirbuf, sizeof(dirbuf), "%s", path);
	if (!realpath(dirname(dirbuf), base))
		snprintf(base, sizeof(base), ".");
	out->rules = json_loadb(text, len, 0, NULL);
	free(text);
	out->values = json_object();
	out->env = json_object();
	if (!out->rules || !out->values || !out->env) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	json_t *rsec = json_object_get(out->rules, "secrets");
	for (size_t i = 0; i < rs.nsrc && !r; i++)
		r = read_secret(&rs.src[i], base, rsec, out->values, path, err, errlen);
	if (r)
		goto out;
	if (rs.upstream_ca) {
		char abs[PATH_MAX];
		size_t n = 0;
		r = absolute(base, rs.upstream_ca, abs, sizeof(abs));
		if (!r && !(out->upstream_ca = file_slurp(abs, PROXY_CA_LIMIT, &n, &st, &e)))
			r = -e;
		if (r) {
			r = errf(err, errlen, -EINVAL, "%s: upstream_ca %s: %s", path,
			         rs.upstream_ca, strerror(-r));
			goto out;
		}
		json_object_set_new(out->rules, "upstream_ca", json_string(abs));
	}
	for (size_t i = 0; i < rs.n; i++)
		for (size_t k = 0; k < rs.rules[i].nenv; k++)
			if (!json_object_get(out->env, rs.rules[i].env[k].name))
				json_object_set_new(out->env, rs.rules[i].env[k].name,
				                    json_string(rs.rules[i].env[k].value));
out:
	proxy_rules_free(&rs);
	if (r)
		proxy_load_free(out);
	return r;
}

int proxy_send(const char *dir, const struct proxy_load *l, char **ca, char *err, size_t errlen)
{
	*ca = NULL;
	json_t *req =
	    json_pack("{s:s, s:O, s:O}", "op", "proxy", "rules", l->rules, "secrets", l->values);
	if (req && l->upstream_ca)
		json_object_set_new(req, "upstream_ca", json_string(l->upstream_ca));
	if (!req)
		return errf(err, errlen, -ENOMEM, "out of memory");
	char sock[PATH_MAX];
	snprintf(sock, sizeof(sock), "%s/%s", dir, EGRESS_SOCK);
	json_t *reply = NULL;
	int r = net_ctl_call(sock, req, &reply, err, errlen);
	json_decref(req);
	const char *pem = json_string_value(json_object_get(reply, "ca"));
	if (!r && !pem)
		r = errf(err, errlen, -EPROTO, "cove-egress gave no CA certificate");
	if (!r && !(*ca = strdup(pem)))
		r = errf(err, errlen, -ENOMEM, "out of memory");
	json_decref(reply);
	return r;
}

int proxy_store(const char *dir, const struct proxy_load *l, char *err, size_t errlen)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, PROXY_RULES_FILE);
	snprintf(tmp, sizeof(tmp), "%s/.%s.%d.tmp", dir, PROXY_RULES_FILE, (int)getpid());
	char *text = json_dumps(l->rules, JSON_COMPACT | JSON_PRESERVE_ORDER);
	(void)unlink(tmp);
	int fd = text ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600) : -1;
	int r = fd < 0 ? -errno : write_all(fd, text, strlen(text));
	if (fd >= 0 && close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	free(text);
	return r ? errf(err, errlen, r, "%s: %s", path, strerror(-r)) : 0;
}

int proxy_copy(const char *from, const char *to)
{
	char src[PATH_MAX], dst[PATH_MAX];
	snprintf(src, sizeof(src), "%s/%s", from, PROXY_RULES_FILE);
	snprintf(dst, sizeof(dst), "%s/%s", to, PROXY_RULES_FILE);
	struct stat st;
	size_t len = 0;
	int e;
	char *text = file_slurp(src, PROXY_RULES_LIMIT, &len, &st, &e);
	if (!text)
		return e == ENOENT ? 0 : -e;
	int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r = fd < 0 ? -errno : write_all(fd, text, len);
	if (fd >= 0)
		close(fd);
	free(text);
	return r;
}

int proxy_agent_ca(struct cove_sandbox *sb, const char *ca, json_t *env, char *err, size_t errlen)
{
	int fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0)
		return fd;
	json_t *o = json_pack("{s:s}", "ca", ca);
	if (o && env)
		json_object_set(o, "env", env);
	int r = o ? cove_send_json(fd, PROTO_CA, o, err, errlen)
	          : errf(err, errlen, -ENOMEM, "out of memory");
	uint8_t *payload = NULL;
	if (!r)
		r = cove_expect(fd, PROTO_OK, &payload, NULL, err, errlen);
	free(payload);
	close(fd);
	return r;
}

int cove_net_proxy(struct cove_sandbox *sb, const char *rules_file, char *err, size_t errlen)
{
	if (!sb || sb->stopped)
		return errf(err, errlen, -ESRCH, "the sandbox is stopped");
	struct proxy_load pl;
	int r = proxy_load_file(rules_file, &pl, err, errlen);
	if (r < 0)
		return r;
	struct registry_meta *m = malloc(sizeof(*m));
	char *ca = NULL;
	if (!m)
		r = errf(err, errlen, -ENOMEM, "out of memory");
	else if ((r = registry_meta_read(sb->dir, m)) < 0)
		r = errf(err, errlen, r, "sandbox %s: unreadable %s/%s", sb->name, sb->dir,
		         REGISTRY_META);
	else if (!m->net.on)
		r = errf(err, errlen, -ENOTSUP,
		         "sandbox %s was started without networking (start it with --net none "
		         "--proxy-rules FILE)",
		         sb->name);
	if (!r)
		r = proxy_send(sb->dir, &pl, &ca, err, errlen);
	/* The guest trusts the CA before the rules are recorded as in force. */
	if (!r)
		r = proxy_agent_ca(sb, ca, pl.env, err, errlen);
	if (!r)
		r = proxy_store(sb->dir, &pl, err, errlen);
	free(ca);
	free(m);
	proxy_load_free(&pl);
	return r;
}
