#include "pins.h"

#include <string.h>

void pins_expire(struct pins *t, uint64_t now_ms)
{
	for (size_t i = 0; i < t->n;)
		if (t->e[i].expires_ms <= now_ms)
			t->e[i] = t->e[--t->n];
		else
			i++;
}

struct pin_entry *pins_find(struct pins *t, const struct netaddr *a, uint8_t proto, uint16_t port)
{
	for (size_t i = 0; i < t->n; i++) {
		struct nft_pin *p = &t->e[i].pin;
		if (p->proto == proto && p->port == port && p->addr.family == a->family &&
		    !memcmp(p->addr.a, a->a, sizeof(a->a)))
			return &t->e[i];
	}
	return NULL;
}

static void set_name(struct pin_entry *e, const char *name)
{
	size_t n = strnlen(name, sizeof(e->name) - 1);
	memcpy(e->name, name, n);
	e->name[n] = '\0';
}

int pins_note(struct pins *t, const struct nft_pin *p, const char *name, uint64_t now_ms)
{
	uint64_t end = now_ms + (uint64_t)p->timeout_s * 1000u;
	pins_expire(t, now_ms);
	struct pin_entry *e = pins_find(t, &p->addr, p->proto, p->port);
	if (e) {
		/* Refresh only when it would end noticeably earlier. */
		if (e->expires_ms + 1000 >= end)
			return 0;
		e->expires_ms = end;
		e->pin.timeout_s = p->timeout_s;
		set_name(e, name);
		return 2;
	}
	if (t->n == PINS_MAX) {
		size_t victim = 0;
		for (size_t i = 1; i < t->n; i++)
			if (t->e[i].expires_ms < t->e[victim].expires_ms)
				victim = i;
		t->e[victim] = t->e[--t->n];
	}
	e = &t->e[t->n++];
	memset(e, 0, sizeof(*e));
	e->pin = *p;
	e->expires_ms = end;
	set_name(e, name);
	return 1;
}

static bool still_allowed(const struct pin_entry *e, const struct netpolicy *policy)
{
	const struct netrule *r = netpolicy_match_name(policy, e->name, e->pin.port);
	return r && r->has_port;
}

size_t pins_keep(const struct pins *t, const struct netpolicy *policy, uint64_t now_ms,
                 struct nft_pin *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < t->n && k < cap; i++) {
		const struct pin_entry *e = &t->e[i];
		if (e->expires_ms <= now_ms + 1000 || !still_allowed(e, policy))
			continue;
		out[k] = e->pin;
		out[k].timeout_s = (uint32_t)((e->expires_ms - now_ms) / 1000);
		k++;
	}
	return k;
}

void pins_prune(struct pins *t, const struct netpolicy *policy)
{
	for (size_t i = 0; i < t->n;)
		if (!still_allowed(&t->e[i], policy))
			t->e[i] = t->e[--t->n];
		else
			i++;
}
