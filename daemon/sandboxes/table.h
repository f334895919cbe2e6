/* coved's sandbox table: the sandboxes it owns, in one list under
 * d->mu, found by id (and by tenant: another tenant's sandbox is not
 * found, exactly as a missing one); new ids and tokens; the tenants. */
#ifndef COVED_SANDBOXES_TABLE_H
#define COVED_SANDBOXES_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/conf/config.h"
#include "daemon/conf/keys.h"

struct coved;
struct coved_sb;

/* A tenant as coved runs it: its quota and its creates in flight (the
 * sandboxes it holds are counted from the list).  inflight: under coved.mu. */
struct coved_tenant {
	char name[COVED_TENANT_LEN + 1];
	struct coved_quota q;
	struct coved_usage inflight;
};

/* Builds d->tenants from d->keys and the config's quotas: 0 or -ENOMEM. */
int coved_tenants_init(struct coved *d) __attribute__((warn_unused_result));
struct coved_tenant *coved_tenant_find(struct coved *d, const char *name);

/* coved_sb_find() - looks a sandbox up by id.
 * Return: a reference (release it with coved_sb_unref) or NULL. */
struct coved_sb *coved_sb_find(struct coved *d, const char *id);
/* coved_sb_find_for() - coved_sb_find() for tenant t: another tenant's
 * sandbox is not found, exactly as a missing one. */
struct coved_sb *coved_sb_find_for(struct coved *d, const char *id, const struct coved_tenant *t);
bool coved_sb_owned(const struct coved_sb *sb, const struct coved_tenant *t);
/* Snapshot of the list (references; release each, then free the array). */
struct coved_sb **coved_sb_all(struct coved *d, size_t *n);
size_t coved_sb_count_live(struct coved *d);
/* Adds sb (a reference of the list's own) at the end / takes it out. */
void coved_sb_list_add(struct coved *d, struct coved_sb *sb);
void coved_sb_list_remove(struct coved *d, struct coved_sb *sb);
/* Empties the list, dropping its references (coved's exit). */
void coved_sb_release_all(struct coved *d);
/* coved_sb_listed() - whether a listing shows sb: it passes f (its
 * state, template and metadata; list_filter.h). */
struct coved_list_filter;
bool coved_sb_listed(struct coved_sb *sb, const struct coved_list_filter *f);

/* New random ids (COVED_ID_LEN), tokens (COVED_TOKEN_LEN) and names of n
 * [a-z0-9] (n <= 64), NUL-terminated: 0 or -errno (getrandom). */
int coved_new_id(char *out);
int coved_new_token(char *out);
int coved_new_name(char *out, size_t n);

#endif
