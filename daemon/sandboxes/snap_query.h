/* User snapshots' names and GET /snapshots' query: a name's rules, the
 * query's values checked and bounded, the page token (newest first, keyed
 * by creation time and id, so that it stays good while others come and
 * go).  Pure; fuzzed (fuzz_coved_json). */
#ifndef COVED_SANDBOXES_SNAP_QUERY_H
#define COVED_SANDBOXES_SNAP_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COVED_SNAP_NAME_MAX      64  /* a name: [A-Za-z0-9_-], not "snap-..." */
#define COVED_SNAP_ID_MAX        40  /* "snap-" and [a-z0-9] */
#define COVED_SNAP_LIMIT_DEFAULT 100 /* a page without ?limit */
#define COVED_SNAP_LIMIT_MAX     1000

/* Where a snapshot stands in the listing: newer first, then by id. */
struct coved_snap_key {
	int64_t ms; /* created, Unix ms */
	char id[COVED_SNAP_ID_MAX + 1];
};

struct coved_snap_query {
	char sandbox_id[COVED_SNAP_NAME_MAX + 1]; /* "": any */
	char name[COVED_SNAP_NAME_MAX + 1];       /* "": any */
	size_t limit;                             /* 1 to COVED_SNAP_LIMIT_MAX */
	bool after_given;                         /* a nextToken: only what follows */
	struct coved_snap_key after;
};

/* coved_snap_name_ok() - whether @s may name a snapshot; else why in @err. */
bool coved_snap_name_ok(const char *s, char *err, size_t errlen);
/* coved_snap_id_ok() - whether @s is a snapshot id ("snap-" and [a-z0-9]). */
bool coved_snap_id_ok(const char *s);

/* coved_snap_query_parse() - GET /snapshots' ?sandboxID=&name=&limit=
 * &nextToken= (each NULL when absent) into @q.
 * Return: 0, or -1 with a one-line @err. */
int coved_snap_query_parse(const char *sandbox_id, const char *name, const char *limit,
                           const char *next, struct coved_snap_query *q, char *err, size_t errlen);

/* coved_snap_key_cmp() - <0 when @a is listed before @b (newer, or as new
 * with a smaller id), 0 when the same, >0 after. */
int coved_snap_key_cmp(const struct coved_snap_key *a, const struct coved_snap_key *b);

/* coved_snap_token() - the nextToken for a page ending at @k, into @out
 * (COVED_SNAP_TOKEN_LEN bytes are enough). */
#define COVED_SNAP_TOKEN_LEN (17 + COVED_SNAP_ID_MAX + 1)
void coved_snap_token(const struct coved_snap_key *k, char *out, size_t len);
/* coved_snap_token_parse() - a token back into @k: 0, or -1 if it is none. */
int coved_snap_token_parse(const char *s, struct coved_snap_key *k);

#endif
