/* coved's sandbox table: the list (oldest first), lookups by id and by
 * tenant, ids and tokens, and the tenants of the keys file (table.h). */
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/list_filter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"

static int random_chars(char *out, size_t n, const char *alphabet, size_t alen)
{
	unsigned char buf[64];
	if (n > sizeof(buf))
		return -EINVAL;
	size_t done = 0;
	while (done < n) {
		ssize_t k = getrandom(buf + done, n - done, 0);
		if (k < 0 && errno != EINTR)
			return -errno;
		if (k > 0)
			done += (size_t)k;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = alphabet[buf[i] % alen];
	out[n] = 0;
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

int coved_new_id(char *out)
{
	/* 36 letters: 256 % 36 != 0 skews a little; ids need uniqueness, not
	 * secrecy. */
	return random_chars(out, COVED_ID_LEN, "abcdefghijklmnopqrstuvwxyz0123456789", 36);
}

int coved_new_token(char *out)
{
	return random_chars(out, COVED_TOKEN_LEN, "0123456789abcdef", 16);
}

int coved_new_name(char *out, size_t n)
{
	return random_chars(out, n, "abcdefghijklmnopqrstuvwxyz0123456789", 36);
}

struct coved_sb *coved_sb_find(struct coved *d, const char *id)
{
	if (!id)
		return NULL;
	pthread_mutex_lock(&d->mu);
	struct coved_sb *sb = d->list;
	while (sb && strcmp(sb->id, id) != 0)
		sb = sb->next;
	if (sb)
		coved_sb_ref(sb);
	pthread_mutex_unlock(&d->mu);
	return sb;
}

int coved_tenants_init(struct coved *d)
{
	d->tenants = calloc(d->nkeys ? d->nkeys : 1, sizeof(*d->tenants));
	if (!d->tenants)
		return -ENOMEM;
	d->ntenants = 0;
	for (size_t i = 0; i < d->nkeys; i++) {
		struct coved_tenant *t = coved_tenant_find(d, d->keys[i].tenant);
		if (!t) {
			t = &d->tenants[d->ntenants++];
			snprintf(t->name, sizeof(t->name), "%s", d->keys[i].tenant);
			coved_config_quota(&d->cfg, t->name, &t->q);
		}
		d->keys[i].t = t;
	}
	const char *k;
	json_t *v;
	json_object_foreach(d->cfg.tenants, k, v)
	{
		if (!coved_tenant_find(d, k))
			fprintf(stderr,
			        "coved: config tenants.%s: no key of the keys file is of it\n", k);
	}
	return 0;
}

struct coved_tenant *coved_tenant_find(struct coved *d, const char *name)
{
	for (size_t i = 0; name && i < d->ntenants; i++)
		if (strcmp(d->tenants[i].name, name) == 0)
			return &d->tenants[i];
	return NULL;
}

bool coved_sb_owned(const struct coved_sb *sb, const struct coved_tenant *t)
{
	return t && strcmp(sb->tenant, t->name) == 0;
}

struct coved_sb *coved_sb_find_for(struct coved *d, const char *id, const struct coved_tenant *t)
{
	struct coved_sb *sb = coved_sb_find(d, id);
	if (sb && !coved_sb_owned(sb, t)) {
		coved_sb_unref(sb);
		return NULL;
	}
	return sb;
}

struct coved_sb **coved_sb_all(struct coved *d, size_t *n)
{
	pthread_mutex_lock(&d->mu);
	size_t c = 0;
	for (struct coved_sb *sb = d->list; sb; sb = sb->next)
		c++;
	struct coved_sb **all = calloc(c + 1, sizeof(*all));
	*n = 0;
	if (all)
		for (struct coved_sb *sb = d->list; sb; sb = sb->next)
			all[(*n)++] = coved_sb_ref(sb);
	pthread_mutex_unlock(&d->mu);
	return all;
}

size_t coved_sb_count_live(struct coved *d)
{
	size_t n = 0;
	pthread_mutex_lock(&d->mu);
	for (struct coved_sb *sb = d->list; sb; sb = sb->next)
		n += sb->state == COVED_SB_RUNNING || sb->state == COVED_SB_PAUSED;
	pthread_mutex_unlock(&d->mu);
	return n;
}

void coved_sb_list_add(struct coved *d, struct coved_sb *sb)
{
	pthread_mutex_lock(&d->mu);
	coved_sb_ref(sb);
	struct coved_sb **p = &d->list;
	/* Oldest first: the list order is the listing's order. */
	while (*p)
		p = &(*p)->next;
	sb->next = NULL;
	*p = sb;
	pthread_mutex_unlock(&d->mu);
}

void coved_sb_list_remove(struct coved *d, struct coved_sb *sb)
{
	pthread_mutex_lock(&d->mu);
	for (struct coved_sb **p = &d->list; *p; p = &(*p)->next)
		if (*p == sb) {
			*p = sb->next;
			sb->removed = true;
			pthread_mutex_unlock(&d->mu);
			coved_sb_unref(sb);
			return;
		}
	pthread_mutex_unlock(&d->mu);
}

void coved_sb_release_all(struct coved *d)
{
	pthread_mutex_lock(&d->mu);
	struct coved_sb *sb = d->list;
	d->list = NULL;
	pthread_mutex_unlock(&d->mu);
	while (sb) {
		struct coved_sb *next = sb->next;
		coved_sb_unref(sb);
		sb = next;
	}
}

bool coved_sb_listed(struct coved_sb *sb, const struct coved_list_filter *f)
{
	pthread_mutex_lock(&sb->mu);
	bool want =
	    coved_list_filter_match(f, coved_state_name(sb->state), sb->template_id, sb->metadata);
	pthread_mutex_unlock(&sb->mu);
	return want;
}
