#include "proxyset.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"

const struct proxy_rule *egress_proxy_host(const struct egress *e, const char *name)
{
	return e->rules.n ? proxy_rules_for_host(&e->rules, name) : NULL;
}

void egress_proxy_clear(struct egress *e)
{
	proxy_rules_free(&e->rules);
	proxy_secrets_free(e->secrets, e->nsecrets);
	free(e->secrets);
	e->secrets = NULL;
	e->nsecrets = 0;
}

/* The request's copies of the values: jansson frees without wiping. */
static void wipe_values(json_t *vals)
{
	const char *k;
	json_t *v;
	json_object_foreach(vals, k, v)
	{
		if (json_is_string(v))
			explicit_bzero((char *)json_string_value(v), json_string_length(v));
	}
}

static int take(struct egress *e, json_t *req, char *err, size_t errlen)
{
	json_t *rj = json_object_get(req, "rules"), *vals = json_object_get(req, "secrets");
	json_t *ca = json_object_get(req, "upstream_ca");
	const char *k;
	json_t *v;
	json_object_foreach(req, k, v)
	{
		if (strcmp(k, "op") && strcmp(k, "rules") && strcmp(k, "secrets") &&
		    strcmp(k, "upstream_ca"))
			return errf(err, errlen, -EINVAL, "proxy: unknown key '%.64s'", k);
	}
	if (!json_is_object(rj) || (vals && !json_is_object(vals)) || (ca && !json_is_string(ca)))
		return errf(err, errlen, -EINVAL,
		            "proxy: needs \"rules\" (object), \"secrets\" (object of strings), "
		            "\"upstream_ca\" (PEM text, optional)");
	if (!e->tls_ok)
		return errf(err, errlen, -ENOTSUP, "proxy: no TLS here (the CA could not be made)");
	char *text = json_dumps(rj, JSON_COMPACT);
	if (!text)
		return errf(err, errlen, -ENOMEM, "out of memory");
	struct proxy_rules rules;
	char why[300];
	int r = proxy_rules_parse(text, strlen(text), &rules, why, sizeof(why));
	free(text);
	if (r)
		return errf(err, errlen, r, "proxy rules: %s", why);
	size_t n = vals ? json_object_size(vals) : 0;
	struct proxy_secret *s = calloc(n + 1, sizeof(*s));
	size_t ns = 0;
	if (!s) {
		r = errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < rules.nsrc; i++) {
		json_t *val = json_object_get(vals, rules.src[i].name);
		const char *sv = json_string_value(val);
		if (!sv || !proxy_secret_value_ok(sv, json_string_length(val)) ||
		    strlen(sv) != json_string_length(val)) {
			r = errf(err, errlen, -EINVAL,
			         "proxy: secret '%s' has no value fit for a header (1-%d bytes, "
			         "no control bytes)",
			         rules.src[i].name, PROXY_VALUE_MAX);
			goto fail;
		}
		snprintf(s[ns].name, sizeof(s[ns].name), "%s", rules.src[i].name);
		s[ns].len = strlen(sv);
		if (!(s[ns].value = malloc(s[ns].len + 1))) {
			r = errf(err, errlen, -ENOMEM, "out of memory");
			goto fail;
		}
		memcpy(s[ns].value, sv, s[ns].len + 1);
		ns++;
	}
	if (ns != n) {
		r = errf(err, errlen, -EINVAL,
		         "proxy: a secret's value without a source in the rules");
		goto fail;
	}
	const char *pem = json_string_value(ca);
	if ((r = tlsca_upstream(&e->ca, pem, pem ? strlen(pem) : 0, err, errlen)))
		goto fail;
	egress_proxy_clear(e);
	e->rules = rules;
	e->secrets = s;
	e->nsecrets = ns;
	return 0;
fail:
	proxy_rules_free(&rules);
	proxy_secrets_free(s, ns);
	free(s);
	return r;
}

int egress_set_proxy(struct egress *e, json_t *req, char *err, size_t errlen)
{
	int r = take(e, req, err, errlen);
	wipe_values(json_object_get(req, "secrets"));
	return r;
}
