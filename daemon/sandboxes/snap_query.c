/* User snapshots' names and GET /snapshots' query (snap_query.h). */
#include "daemon/sandboxes/snap_query.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"

static bool word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* 1 to max bytes of [A-Za-z0-9_-]. */
static bool word_ok(const char *s, size_t max)
{
	size_t n = 0;
	for (; s[n] && n <= max; n++)
		if (!word_char(s[n]))
			return false;
	return n >= 1 && n <= max;
}

bool coved_snap_name_ok(const char *s, char *err, size_t errlen)
{
	if (!s || !word_ok(s, COVED_SNAP_NAME_MAX)) {
		errf(err, errlen, 400, "a snapshot's name is 1 to %d bytes of [A-Za-z0-9_-]",
		     COVED_SNAP_NAME_MAX);
		return false;
	}
	if (strncmp(s, "snap-", 5) == 0) {
		errf(err, errlen, 400, "a snapshot's name may not begin with 'snap-' (its ids do)");
		return false;
	}
	return true;
}

bool coved_snap_id_ok(const char *s)
{
	if (!s || strncmp(s, "snap-", 5) != 0)
		return false;
	size_t n = 0;
	for (const char *p = s + 5; *p; p++, n++)
		if (n >= COVED_SNAP_ID_MAX - 5 ||
		    !((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9')))
			return false;
	return n >= 1;
}

int coved_snap_query_parse(const char *sandbox_id, const char *name, const char *limit,
                           const char *next, struct coved_snap_query *q, char *err, size_t errlen)
{
	memset(q, 0, sizeof(*q));
	q->limit = COVED_SNAP_LIMIT_DEFAULT;
	if (sandbox_id && *sandbox_id) {
		if (!word_ok(sandbox_id, COVED_SNAP_NAME_MAX))
			return errf(err, errlen, -1, "'sandboxID' is not a sandbox id");
		snprintf(q->sandbox_id, sizeof(q->sandbox_id), "%s", sandbox_id);
	}
	if (name && *name) {
		/* An id is a name too: E2B lists a snapshot under both. */
		if (!coved_snap_id_ok(name) && !word_ok(name, COVED_SNAP_NAME_MAX))
			return errf(err, errlen, -1, "'name' is not a snapshot's name");
		snprintf(q->name, sizeof(q->name), "%s", name);
	}
	if (limit) {
		char *end;
		unsigned long v = strtoul(limit, &end, 10);
		if (!*limit || *end || limit[0] < '0' || limit[0] > '9' || v < 1 ||
		    v > COVED_SNAP_LIMIT_MAX)
			return errf(err, errlen, -1, "'limit' must be 1 to %d",
			            COVED_SNAP_LIMIT_MAX);
		q->limit = v;
	}
	if (next && *next) {
		if (coved_snap_token_parse(next, &q->after) < 0)
			return errf(err, errlen, -1, "'nextToken' is not one this listing gave");
		q->after_given = true;
	}
	return 0;
}

int coved_snap_key_cmp(const struct coved_snap_key *a, const struct coved_snap_key *b)
{
	if (a->ms != b->ms)
		return a->ms > b->ms ? -1 : 1;
	return strcmp(a->id, b->id);
}

void coved_snap_token(const struct coved_snap_key *k, char *out, size_t len)
{
	snprintf(out, len, "%" PRIx64 ".%s", (uint64_t)k->ms, k->id);
}

int coved_snap_token_parse(const char *s, struct coved_snap_key *k)
{
	uint64_t ms = 0;
	size_t n = 0;
	for (; s[n] && s[n] != '.'; n++) {
		char c = s[n];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0 || n >= 15) /* 15 hex digits: any time in ms, still positive */
			return -1;
		ms = ms << 4 | (uint64_t)v;
	}
	if (n == 0 || s[n] != '.' || !coved_snap_id_ok(s + n + 1))
		return -1;
	k->ms = (int64_t)ms;
	snprintf(k->id, sizeof(k->id), "%s", s + n + 1);
	return 0;
}
