#include "proxyrule.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errf.h"
#include "netrule.h"

#define REF_OPEN  "{{secrets."
#define REF_CLOSE "}}"

static bool is_tchar(unsigned char c)
{
	return isalnum(c) || strchr("!#$%&'*+-.^_`|~", c);
}

static bool token_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (!n || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)s[i]))
			return false;
	return true;
}

static bool ident_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > PROXY_NAME_MAX || isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

bool proxy_secret_value_ok(const char *v, size_t len)
{
	if (!len || len > PROXY_VALUE_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return false;
	}
	return true;
}

bool proxy_header_forbidden(const char *name, size_t len)
{
	static const char *const bad[] = { "host",       "content-length", "transfer-encoding",
		                           "connection", "keep-alive",     "upgrade",
		                           "te",         "trailer" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (strlen(bad[i]) == len && !strncasecmp(bad[i], name, len))
			return true;
	return len >= 6 && !strncasecmp(name, "proxy-", 6);
}

static char *dup_str(const char *s)
{
	return strdup(s);
}

static void kv_free(struct proxy_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].name);
		free(kv[i].value);
	}
	free(kv);
}

static void list_free(char **l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

void proxy_rules_free(struct proxy_rules *r)
{
	for (size_t i = 0; i < r->n; i++) {
		struct proxy_rule *u = &r->rules[i];
		free(u->name);
		list_free(u->hosts, u->nhosts);
		list_free(u->paths, u->npaths);
		list_free(u->methods, u->nmethods);
		kv_free(u->match, u->nmatch);
		kv_free(u->headers, u->nheaders);
		kv_free(u->env, u->nenv);
	}
	free(r->rules);
	for (size_t i = 0; i < r->nsrc; i++) {
		free(r->src[i].name);
		free(r->src[i].file);
		free(r->src[i].env);
	}
	free(r->src);
	free(r->upstream_ca);
	memset(r, 0, sizeof(*r));
}

void proxy_secrets_free(struct proxy_secret *s, size_t n)
{
	for (size_t i = 0; s && i < n; i++) {
		if (s[i].value) {
			explicit_bzero(s[i].value, s[i].len);
			free(s[i].value);
		}
		s[i].value = NULL;
	}
}

/* Checks every {{secrets.NAME}} of @v against the sources. */
static int refs_check(const struct proxy_rules *r, const char *rule, const char *hdr, const char *v,
                      char *err, size_t errlen)
{
	const char *p = v;
	while ((p = strstr(p, REF_OPEN))) {
		const char *n = p + strlen(REF_OPEN);
		const char *e = strstr(n, REF_CLOSE);
		size_t len = e ? (size_t)(e - n) : 0;
		char name[PROXY_NAME_MAX + 1];
		if (!e || !len || len > PROXY_NAME_MAX)
			return errf(
			    err, errlen, -EINVAL,
			    "rule '%s': header %s: a {{secrets.NAME}} reference is not closed "
			    "or its name is not 1-%d letters, digits or '_'",
			    rule, hdr, PROXY_NAME_MAX);
		memcpy(name, n, len);
		name[len] = 0;
		bool found = false;
		for (size_t i = 0; i < r->nsrc && !found; i++)
			found = !strcmp(r->src[i].name, name);
		if (!found)
			return errf(
			    err, errlen, -EINVAL,
			    "rule '%s': header %s references unknown secret '%.64s' (not in "
			    "\"secrets\")",
			    rule, hdr, name);
		p = e + strlen(REF_CLOSE);
	}
	return 0;
}

static int str_list(json_t *a, const char *rule, const char *key, bool required, char ***out,
                    size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	if (!a) {
		if (required)
			return errf(err, errlen, -EINVAL, "rule '%s' has no \"%s\"", rule, key);
		return 0;
	}
	if (!json_is_array(a) || (required && !json_array_size(a)))
		return errf(err, errlen, -EINVAL, "rule '%s': \"%s\" must be a%s array of strings",
		            rule, key, required ? " non-empty" : "n");
	if (json_array_size(a) > PROXY_LIST_MAX)
		return errf(err, errlen, -EINVAL, "rule '%s': at most %d \"%s\"", rule,
		            PROXY_LIST_MAX, key);
	*out = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!*out)
		return errf(err, errlen, -ENOMEM, "out of memory");
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v))
			return errf(err, errlen, -EINVAL, "rule '%s': \"%s\" must hold strings",
			            rule, key);
		const char *s = json_string_value(v);
		if (strlen(s) != json_string_length(v))
			return errf(err, errlen, -EINVAL, "rule '%s': a NUL byte in \"%s\"", rule,
			            key);
		if (!((*out)[(*n)++] = dup_str(s)))
			return errf(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

static int kv_map(json_t *o, const char *rule, const char *key, struct proxy_kv **out, size_t *n,
                  char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	if (!o)
		return 0;
	if (!json_is_object(o))
		return errf(err, errlen, -EINVAL,
		            "rule '%s': \"%s\" must be an object of names to strings", rule, key);
	if (json_object_size(o) > PROXY_LIST_MAX)
		return errf(err, errlen, -EINVAL, "rule '%s': at most %d \"%s\"", rule,
		            PROXY_LIST_MAX, key);
	*out = calloc(json_object_size(o) + 1, sizeof(**out));
	if (!*out)
		return errf(err, errlen, -ENOMEM, "out of memory");
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return errf(err, errlen, -EINVAL,
			            "rule '%s': \"%s\".%.64s must be a string", rule, key, k);
		const char *s = json_string_value(v);
		if (!proxy_secret_value_ok(s, strlen(s)) && strlen(s))
			return errf(err, errlen, -EINVAL,
			            "rule '%s': \"%s\".%.64s: control bytes or over %d bytes", rule,
			            key, k, PROXY_VALUE_MAX);
		struct proxy_kv *kv = &(*out)[(*n)++];
		kv->name = dup_str(k);
		kv->value = dup_str(s);
		if (!kv->name || !kv->value)
			return errf(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

static int host_norm(const char *in, char **out)
{
	bool wild = !strncmp(in, "*.", 2);
	char buf[NETRULE_NAME_MAX + 3];
	if (netname_normalize(in + (wild ? 2 : 0), buf + 2, sizeof(buf) - 2) < 0)
		return -EINVAL;
	buf[0] = '*';
	buf[1] = '.';
	*out = strdup(wild ? buf : buf + 2);
	return *out ? 0 : -ENOMEM;
}

/* "schemes": a non-empty list of "https" and "http"; absent, https only. */
static int parse_schemes(struct proxy_rule *u, json_t *a, char *err, size_t errlen)
{
	u->schemes = PROXY_SCHEME_HTTPS;
	if (!a)
		return 0;
	char **l = NULL;
	size_t n = 0;
	int r = str_list(a, u->name, "schemes", true, &l, &n, err, errlen);
	u->schemes = 0;
	for (size_t i = 0; !r && i < n; i++) {
		if (!strcmp(l[i], "https"))
			u->schemes |= PROXY_SCHEME_HTTPS;
		else if (!strcmp(l[i], "http"))
			u->schemes |= PROXY_SCHEME_HTTP;
		else
			r = errf(err, errlen, -EINVAL,
			         "rule '%s': scheme '%.20s' is neither \"https\" nor \"http\"",
			         u->name, l[i]);
	}
	list_free(l, n);
	return r;
}

static int parse_rule(struct proxy_rules *rs, json_t *j, size_t idx, char *err, size_t errlen)
{
	struct proxy_rule *u = &rs->rules[idx];
	if (!json_is_object(j))
		return errf(err, errlen, -EINVAL, "rules[%zu] is not an object", idx);
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v)
	{
		static const char *const keys[] = { "name",          "match_hosts",   "match_paths",
			                            "match_methods", "match_headers", "headers",
			                            "env_vars",      "schemes" };
		bool known = false;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]) && !known; i++)
			known = !strcmp(k, keys[i]);
		if (!known)
			return errf(err, errlen, -EINVAL, "rules[%zu]: unknown key '%.64s'", idx,
			            k);
	}
	const char *name = json_string_value(json_object_get(j, "name"));
	if (!name || !token_ok(name, PROXY_NAME_MAX))
		return errf(err, errlen, -EINVAL,
		            "rules[%zu] needs a \"name\" of 1-%d letters, digits or -._", idx,
		            PROXY_NAME_MAX);
	for (size_t i = 0; i < idx; i++)
		if (!strcmp(rs->rules[i].name, name))
			return errf(err, errlen, -EINVAL, "two rules are named '%s'", name);
	if (!(u->name = strdup(name)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = str_list(json_object_get(j, "match_hosts"), name, "match_hosts", true, &u->hosts,
	                 &u->nhosts, err, errlen);
	if (r)
		return r;
	for (size_t i = 0; i < u->nhosts; i++) {
		char *n = NULL;
		if (host_norm(u->hosts[i], &n))
			return errf(err, errlen, -EINVAL,
			            "rule '%s': host '%.253s' is not a name or *.name", name,
			            u->hosts[i]);
		free(u->hosts[i]);
		u->hosts[i] = n;
	}
	if ((r = str_list(json_object_get(j, "match_paths"), name, "match_paths", false, &u->paths,
	                  &u->npaths, err, errlen)))
		return r;
	for (size_t i = 0; i < u->npaths; i++) {
		const char *p = u->paths[i];
		if ((p[0] != '/' && p[0] != '*') || strlen(p) > PROXY_PATH_MAX ||
		    !proxy_secret_value_ok(p, strlen(p)) || strchr(p, ' '))
			return errf(
			    err, errlen, -EINVAL,
			    "rule '%s': path '%.200s' must start with '/' (a prefix or a glob), "
			    "without spaces",
			    name, p);
	}
	if ((r = parse_schemes(u, json_object_get(j, "schemes"), err, errlen)))
		return r;
	if ((r = str_list(json_object_get(j, "match_methods"), name, "match_methods", false,
	                  &u->methods, &u->nmethods, err, errlen)))
		return r;
	for (size_t i = 0; i < u->nmethods; i++) {
		char *m = u->methods[i];
		if (!token_ok(m, 32))
			return errf(err, errlen, -EINVAL, "rule '%s': '%.40s' is not a method",
			            name, m);
		for (char *c = m; *c; c++)
			*c = (char)toupper((unsigned char)*c);
	}
	if ((r = kv_map(json_object_get(j, "match_headers"), name, "match_headers", &u->match,
	                &u->nmatch, err, errlen)) ||
	    (r = kv_map(json_object_get(j, "headers"), name, "headers", &u->headers, &u->nheaders,
	                err, errlen)) ||
	    (r = kv_map(json_object_get(j, "env_vars"), name, "env_vars", &u->env, &u->nenv, err,
	                errlen)))
		return r;
	for (size_t i = 0; i < u->nmatch; i++)
		if (!token_ok(u->match[i].name, PROXY_NAME_MAX))
			return errf(err, errlen, -EINVAL,
			            "rule '%s': match_headers: '%.64s' is not a header name", name,
			            u->match[i].name);
	for (size_t i = 0; i < u->nheaders; i++) {
		struct proxy_kv *h = &u->headers[i];
		if (!token_ok(h->name, PROXY_NAME_MAX))
			return errf(err, errlen, -EINVAL, "rule '%s': '%.64s' is not a header name",
			            name, h->name);
		if (proxy_header_forbidden(h->name, strlen(h->name)))
			return errf(
			    err, errlen, -EINVAL,
			    "rule '%s': header %s cannot be injected (hop-by-hop or framing)", name,
			    h->name);
		if (!h->value[0])
			return errf(err, errlen, -EINVAL, "rule '%s': header %s has an empty value",
			            name, h->name);
		if ((r = refs_check(rs, name, h->name, h->value, err, errlen)))
			return r;
	}
	for (size_t i = 0; i < u->nenv; i++) {
		if (!ident_ok(u->env[i].name))
			return errf(err, errlen, -EINVAL,
			            "rule '%s': env_vars: '%.64s' is not a variable name", name,
			            u->env[i].name);
		if (strstr(u->env[i].value, REF_OPEN))
			return errf(err, errlen, -EINVAL,
			            "rule '%s': env_vars.%s: dummy values only, never a secret",
			            name, u->env[i].name);
	}
	if (!u->nheaders && !u->nenv)
		return errf(err, errlen, -EINVAL,
		            "rule '%s' has neither \"headers\" nor \"env_vars\"", name);
	return 0;
}

static int parse_sources(struct proxy_rules *rs, json_t *o, char *err, size_t errlen)
{
	if (!o)
		return 0;
	if (!json_is_object(o))
		return errf(err, errlen, -EINVAL,
		            "\"secrets\" must be an object: {\"NAME\": {\"file\": PATH} or "
		            "{\"env\": VAR}}");
	if (json_object_size(o) > PROXY_SECRETS_MAX)
		return errf(err, errlen, -EINVAL, "at most %d secrets", PROXY_SECRETS_MAX);
	rs->src = calloc(json_object_size(o) + 1, sizeof(*rs->src));
	if (!rs->src)
		return errf(err, errlen, -ENOMEM, "out of memory");
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		if (!ident_ok(k))
			return errf(err, errlen, -EINVAL,
			            "secret '%.64s': names are 1-%d letters, digits or '_'", k,
			            PROXY_NAME_MAX);
		json_t *f = json_object_get(v, "file"), *e = json_object_get(v, "env");
		if (!json_is_object(v) || json_object_size(v) != 1 ||
		    !(json_is_string(f) || json_is_string(e)))
			return errf(err, errlen, -EINVAL,
			            "secret '%s' must be {\"file\": PATH} or {\"env\": VAR}", k);
		const char *s = json_string_value(f ? f : e);
		if (strlen(s) != json_string_length(f ? f : e) || !s[0] ||
		    strlen(s) > PROXY_PATH_MAX || (e && !ident_ok(s)))
			return errf(err, errlen, -EINVAL, "secret '%s': a bad %s", k,
			            f ? "file path" : "variable name");
		struct proxy_source *src = &rs->src[rs->nsrc++];
		src->name = strdup(k);
		if (f)
			src->file = strdup(s);
		else
			src->env = strdup(s);
		if (!src->name || !(src->file || src->env))
			return errf(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

int proxy_rules_parse(const char *text, size_t len, struct proxy_rules *out, char *err,
                      size_t errlen)
{
	memset(out, 0, sizeof(*out));
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	int r = 0;
	if (!j) {
		r = errf(err, errlen, -EINVAL, "not JSON (line %d: %s)", je.line, je.text);
		goto out;
	}
	if (!json_is_object(j)) {
		r = errf(err, errlen, -EINVAL, "not a JSON object with \"rules\"");
		goto out;
	}
	const char *k;
	json_t *v;
	json_object_foreach(j, k, v)
	{
		if (strcmp(k, "rules") && strcmp(k, "secrets") && strcmp(k, "upstream_ca")) {
			r = errf(err, errlen, -EINVAL,
			         "unknown key '%.64s' (rules, secrets, upstream_ca)", k);
			goto out;
		}
	}
	json_t *ca = json_object_get(j, "upstream_ca");
	if (ca) {
		const char *s = json_string_value(ca);
		if (!s || !s[0] || strlen(s) != json_string_length(ca) ||
		    strlen(s) > PROXY_PATH_MAX) {
			r = errf(err, errlen, -EINVAL, "\"upstream_ca\" must be a file path");
			goto out;
		}
		if (!(out->upstream_ca = strdup(s))) {
			r = errf(err, errlen, -ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((r = parse_sources(out, json_object_get(j, "secrets"), err, errlen)))
		goto out;
	json_t *rules = json_object_get(j, "rules");
	if (!json_is_array(rules)) {
		r = errf(err, errlen, -EINVAL, "\"rules\" must be an array (it may be empty)");
		goto out;
	}
	if (json_array_size(rules) > PROXY_RULES_MAX) {
		r = errf(err, errlen, -EINVAL, "at most %d rules", PROXY_RULES_MAX);
		goto out;
	}
	out->rules = calloc(json_array_size(rules) + 1, sizeof(*out->rules));
	if (!out->rules) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	size_t i;
	json_array_foreach(rules, i, v)
	{
		out->n = i + 1;
		if ((r = parse_rule(out, v, i, err, errlen)))
			goto out;
	}
out:
	json_decref(j);
	if (r)
		proxy_rules_free(out);
	return r;
}

bool proxy_host_match(const char *pat, const char *host)
{
	if (strncmp(pat, "*.", 2))
		return !strcmp(pat, host);
	size_t pl = strlen(pat + 1), hl = strlen(host); /* ".NAME" */
	return hl > pl && !strcmp(host + hl - pl, pat + 1);
}

const struct proxy_rule *proxy_rules_for_host(const struct proxy_rules *r, const char *host)
{
	for (size_t i = 0; r && i < r->n; i++)
		for (size_t h = 0; h < r->rules[i].nhosts; h++)
			if (proxy_host_match(r->rules[i].hosts[h], host))
				return &r->rules[i];
	return NULL;
}

static bool path_match(const struct proxy_rule *u, const char *path, size_t len)
{
	if (!u->npaths)
		return true;
	const char *q = memchr(path, '?', len);
	if (q)
		len = (size_t)(q - path);
	char buf[8192];
	if (len >= sizeof(buf))
		return false;
	memcpy(buf, path, len);
	buf[len] = 0;
	for (size_t i = 0; i < u->npaths; i++) {
		const char *p = u->paths[i];
		if (strpbrk(p, "*?[")) {
			if (!fnmatch(p, buf, FNM_PATHNAME))
				return true;
		} else if (!strncmp(buf, p, strlen(p))) {
			return true;
		}
	}
	return false;
}

const struct proxy_rule *proxy_rules_match(const struct proxy_rules *r, const char *host, bool tls,
                                           const char *method, const char *path, size_t pathlen,
                                           const struct proxy_hdr *hdrs, size_t nhdrs)
{
	unsigned scheme = tls ? PROXY_SCHEME_HTTPS : PROXY_SCHEME_HTTP;
	for (size_t i = 0; r && i < r->n; i++) {
		const struct proxy_rule *u = &r->rules[i];
		if (!(u->schemes & scheme))
			continue;
		bool ok = false;
		for (size_t h = 0; h < u->nhosts && !ok; h++)
			ok = proxy_host_match(u->hosts[h], host);
		if (!ok || !path_match(u, path, pathlen))
			continue;
		ok = !u->nmethods;
		for (size_t m = 0; m < u->nmethods && !ok; m++)
			ok = !strcmp(u->methods[m], method);
		for (size_t m = 0; ok && m < u->nmatch; m++) {
			size_t nl = strlen(u->match[m].name), vl = strlen(u->match[m].value);
			bool seen = false;
			for (size_t k = 0; k < nhdrs && !seen; k++)
				seen = hdrs[k].nlen == nl &&
				       !strncasecmp(hdrs[k].name, u->match[m].name, nl) &&
				       hdrs[k].vlen == vl &&
				       !memcmp(hdrs[k].value, u->match[m].value, vl);
			ok = seen;
		}
		if (ok)
			return u;
	}
	return NULL;
}

long proxy_expand(const char *tmpl, const struct proxy_secret *s, size_t ns, char *out,
                  size_t outlen, char *missing, size_t mlen)
{
	size_t o = 0;
	const char *p = tmpl;
	if (mlen)
		missing[0] = 0;
	while (*p) {
		const char *ref = strstr(p, REF_OPEN);
		size_t lit = ref ? (size_t)(ref - p) : strlen(p);
		if (o + lit >= outlen)
			return -E2BIG;
		memcpy(out + o, p, lit);
		o += lit;
		if (!ref)
			break;
		const char *n = ref + strlen(REF_OPEN);
		const char *e = strstr(n, REF_CLOSE);
		size_t len = e ? (size_t)(e - n) : strlen(n);
		const struct proxy_secret *hit = NULL;
		for (size_t i = 0; e && i < ns && !hit; i++)
			if (strlen(s[i].name) == len && !memcmp(s[i].name, n, len) && s[i].value)
				hit = &s[i];
		if (!hit) {
			if (mlen)
				snprintf(missing, mlen, "%.*s", (int)(len < 64 ? len : 64), n);
			return -ENOENT;
		}
		if (o + hit->len >= outlen)
			return -E2BIG;
		memcpy(out + o, hit->value, hit->len);
		o += hit->len;
		p = e + strlen(REF_CLOSE);
	}
	out[o] = 0;
	return (long)o;
}
