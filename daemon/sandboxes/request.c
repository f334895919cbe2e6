/* Create and network requests (request.h). */
#include "daemon/sandboxes/request.h"

#include <stdlib.h>
#include <string.h>

#include "cove.h"
#include "errf.h"

void coved_net_free(struct coved_net *n)
{
	json_decref(n->allow_out);
	json_decref(n->deny_out);
	n->allow_out = n->deny_out = NULL;
}

void coved_create_free(struct coved_create *c)
{
	json_decref(c->metadata);
	json_decref(c->env_vars);
	c->metadata = c->env_vars = NULL;
	coved_net_free(&c->net);
}

int coved_net_policy(const struct coved_net *n, bool network_on, struct cove_net_policy *p,
                     const char ***allow, const char ***deny, char *msg, size_t len)
{
	*allow = *deny = NULL;
	memset(p, 0, sizeof(*p));
	bool internet = !n->internet_given || n->internet, given = n->given;
	json_t *a = given ? n->allow_out : NULL, *dn = given ? n->deny_out : NULL;
	if (!network_on) {
		/* No NIC: "no internet" holds; anything else cannot. */
		if (given && (internet || json_array_size(a) > 0)) {
			errf(msg, len, 400,
			     "networking is off in coved's config (\"network\": false): only "
			     "allow_internet_access false can be honoured");
			return 400;
		}
		p->mode = COVE_NET_OFF;
		return 0;
	}
	size_t na = json_array_size(a), nd = json_array_size(dn);
	*allow = calloc(na + 1, sizeof(char *));
	*deny = calloc(nd + 1, sizeof(char *));
	if (!*allow || !*deny)
		return 500;
	bool deny_all = false;
	size_t k = 0;
	for (size_t i = 0; i < nd; i++) {
		const char *s = json_string_value(json_array_get(dn, i));
		if (strcmp(s, "0.0.0.0/0") == 0)
			deny_all = true;
		else
			(*deny)[k++] = s;
	}
	for (size_t i = 0; i < na; i++)
		(*allow)[i] = json_string_value(json_array_get(a, i));
	if (na > 0)
		p->mode = COVE_NET_RULES;
	else if (!internet || deny_all)
		p->mode = COVE_NET_NONE;
	else
		p->mode = COVE_NET_OPEN;
	p->allow = na ? *allow : NULL;
	p->deny = k ? *deny : NULL;
	return 0;
}

json_t *coved_net_json(const struct coved_net *n)
{
	if (!n->given)
		return NULL;
	json_t *o = json_object();
	if (n->internet_given)
		json_object_set_new(o, "allow_internet_access", json_boolean(n->internet));
	if (n->allow_out)
		json_object_set(o, "allowOut", n->allow_out);
	if (n->deny_out)
		json_object_set(o, "denyOut", n->deny_out);
	return o;
}
