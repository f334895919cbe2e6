/* Unit tests: user snapshots' names and GET /snapshots' query
 * (daemon/sandboxes/snap_query.c), and the module over their meta files
 * (daemon/sandboxes/snapshots.c) on a state directory made here: a name
 * moves to the newest snapshot given it, the listing is the tenant's,
 * newest first, filtered and paged by a token that survives a delete;
 * another tenant's snapshot is not found; a delete is refused while a
 * sandbox or another snapshot stands on it, then removes the directory,
 * the meta file and a pause only it kept.  Stand-ins below for the
 * sandbox table's calls. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon/sandboxes/record.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/snap_query.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "unit.h"

static int64_t now = 1764800000000;

int64_t coved_now_ms(void)
{
	return now;
}

json_t *coved_str_list(char **v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

int coved_write_atomic(const char *dir, const char *name, const char *text)
{
	char path[4400];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) ? -EIO : 0;
}

static struct coved d;
static struct coved_tenant tenants[2] = { { .name = "alpha" }, { .name = "beta" } };

struct coved_tenant *coved_tenant_find(struct coved *dd, const char *name)
{
	for (size_t i = 0; i < dd->ntenants; i++)
		if (strcmp(dd->tenants[i].name, name) == 0)
			return &dd->tenants[i];
	return NULL;
}

START_TEST(names)
{
	char err[200], long_name[80];
	ck_assert(coved_snap_name_ok("my-snap_1", err, sizeof(err)));
	memset(long_name, 'a', 64);
	long_name[64] = 0;
	ck_assert(coved_snap_name_ok(long_name, err, sizeof(err)));
	long_name[64] = 'a';
	long_name[65] = 0;
	ck_assert(!coved_snap_name_ok(long_name, err, sizeof(err)));
	ck_assert(strstr(err, "1 to 64 bytes"));
	ck_assert(!coved_snap_name_ok("", err, sizeof(err)));
	ck_assert(!coved_snap_name_ok("a b", err, sizeof(err)));
	ck_assert(!coved_snap_name_ok("a/b", err, sizeof(err)));
	ck_assert(!coved_snap_name_ok("caf\xc3\xa9", err, sizeof(err)));
	ck_assert(!coved_snap_name_ok("snap-abc", err, sizeof(err)));
	ck_assert(strstr(err, "snap-"));
	ck_assert(coved_snap_id_ok("snap-0123456789abcdef"));
	ck_assert(!coved_snap_id_ok("snap-"));
	ck_assert(!coved_snap_id_ok("snap-ABC"));
	ck_assert(!coved_snap_id_ok("snap-../x"));
	ck_assert(!coved_snap_id_ok("base"));
	ck_assert(!coved_snap_id_ok("snap-0123456789012345678901234567890123456789"));
}
END_TEST

START_TEST(query)
{
	struct coved_snap_query q;
	char err[200];
	ck_assert_int_eq(coved_snap_query_parse(NULL, NULL, NULL, NULL, &q, err, sizeof(err)), 0);
	ck_assert_uint_eq(q.limit, COVED_SNAP_LIMIT_DEFAULT);
	ck_assert(!q.sandbox_id[0] && !q.name[0] && !q.after_given);
	ck_assert_int_eq(coved_snap_query_parse("", "", NULL, "", &q, err, sizeof(err)), 0);
	ck_assert_int_eq(
	    coved_snap_query_parse("i0123", "snap-ab12", "1000", NULL, &q, err, sizeof(err)), 0);
	ck_assert_str_eq(q.sandbox_id, "i0123");
	ck_assert_str_eq(q.name, "snap-ab12");
	ck_assert_uint_eq(q.limit, 1000);
	static const char *const bad_limits[] = { "0",  "1001", "-1", "+5",
		                                  " 5", "5x",   "",   "99999999999999999999" };
	for (size_t i = 0; i < sizeof(bad_limits) / sizeof(bad_limits[0]); i++) {
		ck_assert_int_eq(
		    coved_snap_query_parse(NULL, NULL, bad_limits[i], NULL, &q, err, sizeof(err)),
		    -1);
		ck_assert_str_eq(err, "'limit' must be 1 to 1000");
	}
	ck_assert_int_eq(coved_snap_query_parse("a/b", NULL, NULL, NULL, &q, err, sizeof(err)), -1);
	ck_assert_int_eq(coved_snap_query_parse(NULL, "a b", NULL, NULL, &q, err, sizeof(err)), -1);
	ck_assert_int_eq(coved_snap_query_parse(NULL, NULL, NULL, "zz", &q, err, sizeof(err)), -1);
	ck_assert(!strchr(err, '\n'));
}
END_TEST

START_TEST(tokens)
{
	struct coved_snap_key k = { .ms = 1764800000123, .id = "snap-abc" }, back;
	char t[COVED_SNAP_TOKEN_LEN];
	coved_snap_token(&k, t, sizeof(t));
	ck_assert_int_eq(coved_snap_token_parse(t, &back), 0);
	ck_assert_int_eq(coved_snap_key_cmp(&k, &back), 0);
	ck_assert_int_eq(back.ms, k.ms);
	static const char *const bad[] = { "",
		                           ".snap-a",
		                           "12",
		                           "12.",
		                           "12.base",
		                           "1G.snap-a",
		                           "1234567890123456.snap-a",
		                           "12.snap-a/b" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(coved_snap_token_parse(bad[i], &back), -1);
	/* Newer first; as new: by id. */
	struct coved_snap_key older = { .ms = 5, .id = "snap-a" },
	                      newer = { .ms = 6, .id = "snap-a" },
	                      twin = { .ms = 6, .id = "snap-b" };
	ck_assert_int_lt(coved_snap_key_cmp(&newer, &older), 0);
	ck_assert_int_gt(coved_snap_key_cmp(&older, &newer), 0);
	ck_assert_int_lt(coved_snap_key_cmp(&newer, &twin), 0);
}
END_TEST

static char state[] = "/tmp/cove-snaps.XXXXXX";

/* A sandbox record of tenant @tenant standing on the snapshot dirs @snaps. */
static struct coved_sb *record(const char *id, const char *tenant, const char **snaps)
{
	struct coved_sb *sb = calloc(1, sizeof(*sb));
	sb->d = &d;
	snprintf(sb->id, sizeof(sb->id), "%s", id);
	snprintf(sb->tenant, sizeof(sb->tenant), "%s", tenant);
	sb->template_id = strdup("base");
	pthread_mutex_init(&sb->mu, NULL);
	for (; snaps && *snaps; snaps++)
		coved_sb_add_snap(sb, *snaps);
	return sb;
}

static void unrecord(struct coved_sb *sb)
{
	for (size_t i = 0; i < sb->nsnaps; i++)
		free(sb->snaps[i]);
	free(sb->snaps);
	free(sb->template_id);
	pthread_mutex_destroy(&sb->mu);
	free(sb);
}

int coved_sb_add_snap(struct coved_sb *sb, const char *dir)
{
	sb->snaps = realloc(sb->snaps, (sb->nsnaps + 1) * sizeof(*sb->snaps));
	sb->snaps[sb->nsnaps++] = strdup(dir);
	return 0;
}

static const char *sdir(const char *name)
{
	static char buf[4][200];
	static int n;
	char *p = buf[n++ % 4];
	snprintf(p, 200, "%s/snapshots/%s", state, name);
	return p;
}

/* Snapshot @id of sandbox @sb (standing on @chain then on it), named @name. */
static void snap(struct coved_sb *sb, const char *id, const char *name)
{
	ck_assert_int_eq(mkdir(sdir(id), 0700), 0);
	coved_sb_add_snap(sb, sdir(id));
	ck_assert_int_eq(coved_snap_record(sb, id, name), 0);
	now += 1000;
}

static json_t *list(const struct coved_tenant *t, const char *sbid, const char *name,
                    const char *limit, const char *next_in, char *next)
{
	struct coved_snap_query q;
	char err[200];
	ck_assert_int_eq(coved_snap_query_parse(sbid, name, limit, next_in, &q, err, sizeof(err)),
	                 0);
	json_t *a = coved_snap_list(&d, t, &q, next, COVED_SNAP_TOKEN_LEN);
	ck_assert_ptr_nonnull(a);
	return a;
}

static const char *at(json_t *a, size_t i, const char *key)
{
	json_t *v = json_object_get(json_array_get(a, i), key);
	return json_is_array(v) ? json_string_value(json_array_get(v, 0)) : json_string_value(v);
}

START_TEST(module)
{
	ck_assert_ptr_nonnull(mkdtemp(state));
	d.cfg.state_dir = state;
	d.tenants = tenants;
	d.ntenants = 2;
	pthread_mutex_init(&d.mu, NULL);
	ck_assert_int_eq(mkdir(sdir(""), 0700), 0);
	ck_assert_int_eq(mkdir(sdir("s1.1"), 0700), 0); /* a pause of s1's */
	const char *pause[] = { sdir("s1.1"), NULL };
	struct coved_sb *s1 = record("s1", "alpha", pause), *s2 = record("s2", "beta", NULL);
	snap(s1, "snap-a1", "one");
	snap(s1, "snap-a2", NULL);
	snap(s1, "snap-a3", "one"); /* the name moves here */
	snap(s2, "snap-b1", "one"); /* another tenant's: its own "one" */
	char next[COVED_SNAP_TOKEN_LEN], next2[COVED_SNAP_TOKEN_LEN];

	json_t *a = list(&tenants[0], NULL, NULL, NULL, NULL, next);
	ck_assert_uint_eq(json_array_size(a), 3);
	ck_assert_str_eq(at(a, 0, "snapshotID"), "snap-a3");
	ck_assert_str_eq(at(a, 0, "names"), "one");
	ck_assert_str_eq(at(a, 0, "sandboxID"), "s1");
	ck_assert_str_eq(at(a, 1, "names"), "snap-a2");
	ck_assert_str_eq(at(a, 2, "names"), "snap-a1"); /* lost "one" */
	ck_assert_str_eq(next, "");
	json_decref(a);
	a = list(&tenants[0], NULL, "one", NULL, NULL, next);
	ck_assert_uint_eq(json_array_size(a), 1);
	ck_assert_str_eq(at(a, 0, "snapshotID"), "snap-a3");
	json_decref(a);
	a = list(&tenants[0], "s2", NULL, NULL, NULL, next);
	ck_assert_uint_eq(json_array_size(a), 0); /* beta's sandbox, alpha asks */
	json_decref(a);
	a = list(&tenants[1], NULL, NULL, NULL, NULL, next);
	ck_assert_uint_eq(json_array_size(a), 1);
	ck_assert_str_eq(at(a, 0, "snapshotID"), "snap-b1");
	json_decref(a);

	/* Pages of 2: a token, then the rest. */
	a = list(&tenants[0], "s1", NULL, "2", NULL, next);
	ck_assert_uint_eq(json_array_size(a), 2);
	ck_assert_str_eq(at(a, 1, "snapshotID"), "snap-a2");
	ck_assert_str_ne(next, "");
	json_decref(a);

	/* Lookups: by id, by name, never another tenant's. */
	char path[300];
	ck_assert_int_eq(coved_snap_find(&d, &tenants[0], "one", path, sizeof(path)), 1);
	coved_snap_unhold();
	ck_assert_str_eq(path, sdir("snap-a3"));
	ck_assert_int_eq(coved_snap_find(&d, &tenants[1], "one", path, sizeof(path)), 1);
	coved_snap_unhold();
	ck_assert_str_eq(path, sdir("snap-b1"));
	ck_assert_int_eq(coved_snap_find(&d, &tenants[0], "snap-b1", path, sizeof(path)), 0);
	ck_assert_int_eq(coved_snap_find(&d, &tenants[0], "base", path, sizeof(path)), 0);
	ck_assert(coved_snap_here(&d, &tenants[0], "one") &&
	          coved_snap_here(&d, &tenants[0], "snap-a1"));
	ck_assert(!coved_snap_here(&d, &tenants[0], "snap-b1") &&
	          !coved_snap_here(&d, &tenants[0], "two"));
	/* The names are indexed once per change: a new name is found after
	 * a lookup read the index, and a deleted one is gone. */
	snap(s1, "snap-a4", "two");
	ck_assert_int_eq(coved_snap_find(&d, &tenants[0], "two", path, sizeof(path)), 1);
	coved_snap_unhold();
	ck_assert_str_eq(path, sdir("snap-a4"));
	ck_assert(!coved_snap_here(&d, &tenants[1], "two"));
	char m4[300];
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[0], "two", m4, sizeof(m4)), 0);
	ck_assert(!coved_snap_here(&d, &tenants[0], "two"));
	ck_assert_int_eq(coved_snap_find(&d, &tenants[0], "one", path, sizeof(path)), 1);
	coved_snap_unhold();
	ck_assert_str_eq(path, sdir("snap-a3"));

	/* Deletes: another tenant's is not found; in use while a sandbox or a
	 * snapshot's chain stands on it. */
	char msg[300];
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[0], "snap-b1", msg, sizeof(msg)), 404);
	ck_assert_str_eq(msg, "snapshot 'snap-b1' not found");
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[0], "nosuch", msg, sizeof(msg)), 404);
	d.list = s1;
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[0], "snap-a2", msg, sizeof(msg)), 409);
	ck_assert_str_eq(msg, "snapshot snap-a2 is in use: sandbox s1 stands on it");
	d.list = NULL; /* s1 killed */
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[0], "snap-a1", msg, sizeof(msg)), 409);
	ck_assert_ptr_nonnull(strstr(msg, "snapshot snap-a1 is in use: snapshot snap-a"));

	/* The page token holds across a delete of what it names. */
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[0], "one", msg, sizeof(msg)), 0);
	ck_assert_int_eq(access(sdir("snap-a3"), F_OK), -1);
	a = list(&tenants[0], "s1", NULL, "2", next, next2);
	ck_assert_uint_eq(json_array_size(a), 1);
	ck_assert_str_eq(at(a, 0, "snapshotID"), "snap-a1");
	ck_assert_str_eq(next2, "");
	json_decref(a);
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[0], "snap-a3", msg, sizeof(msg)), 404);
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[0], "snap-a2", msg, sizeof(msg)), 0);
	ck_assert_int_eq(access(sdir("s1.1"), F_OK), 0); /* snap-a1 stands on it */
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[0], "snap-a1", msg, sizeof(msg)), 0);
	ck_assert_int_eq(access(sdir("s1.1"), F_OK), -1); /* only it kept it */
	ck_assert_int_eq(access(sdir("snap-a1.json"), F_OK), -1);
	a = list(&tenants[0], NULL, NULL, NULL, NULL, next);
	ck_assert_uint_eq(json_array_size(a), 0);
	json_decref(a);
	ck_assert_int_eq(coved_snap_delete(&d, &tenants[1], "snap-b1", msg, sizeof(msg)), 0);

	unrecord(s1);
	unrecord(s2);
	coved_snap_index_free();
	pthread_mutex_destroy(&d.mu);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_snapshots");
	TCase *tc = tcase_create("snapshots");
	tcase_add_test(tc, names);
	tcase_add_test(tc, query);
	tcase_add_test(tc, tokens);
	tcase_add_test(tc, module);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
