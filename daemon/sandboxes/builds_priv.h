/* The build table's insides, shared by builds.c (the table, records and
 * threads) and build_json.c (the views). */
#ifndef COVED_SANDBOXES_BUILDS_PRIV_H
#define COVED_SANDBOXES_BUILDS_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/conf/keys.h"
#include "daemon/sandboxes/buildlog.h"
#include "daemon/sandboxes/builds.h"

enum coved_bstatus {
	COVED_BUILD_PENDING, /* E2B's: requested, its steps not sent yet */
	COVED_BUILD_WAITING, /* for a slot (max_template_builds) */
	COVED_BUILD_BUILDING,
	COVED_BUILD_READY,
	COVED_BUILD_ERROR,
};

struct coved_build {
	struct coved_build *next;
	char tenant[COVED_TENANT_LEN + 1];
	char name[COVED_BUILD_NAME_MAX + 1];
	char store[COVED_BUILD_STORE_LEN + 1];
	char id[COVED_BUILD_ID_LEN + 1];
	enum coved_bstatus status;
	char reason[300]; /* one line, for COVED_BUILD_ERROR */
	struct coved_build_req req;
	struct coved_blog log;
	int64_t created_ms, finished_ms; /* Unix ms; finished 0 while not */
	int64_t deadline_ms;             /* Unix ms once started */
	bool thread;                     /* its build thread (or removal) has not ended */
	bool built; /* the store holds a template of it (this build's or the last good one) */
};

struct coved_builds {
	pthread_mutex_t mu; /* everything here and in every build */
	pthread_cond_t slot;
	struct coved_build *list;
	unsigned int running, threads;
};

/* Under mu: the tenant's build of name, or NULL. */
struct coved_build *coved_build_find(struct coved_builds *bs, const char *tenant, const char *name);
/* Under mu: writes b's record (a crash leaves the old one or the new). */
void coved_build_save(struct coved *d, const struct coved_build *b);
/* Under mu: ends b with status and reason (a status line in its log). */
void coved_build_finish(struct coved *d, struct coved_build *b, enum coved_bstatus st,
                        const char *reason);
void coved_build_free(struct coved_build *b);
const char *coved_bstatus_name(enum coved_bstatus s);

#endif
