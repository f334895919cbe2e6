/* Unit tests: coved's journal writer (daemon/sandboxes/journal.c) on a
 * record made here: lines are chained from seq 1 and verify whole; the
 * egress log's decisions are folded in before the next line, in order,
 * once each (the mark survives a new record of the same sandbox, as after
 * a coved restart), a line that is no JSON as a string, an emptied log
 * read from its start; a new record continues the chain from the file's
 * last line; a torn last line is ended and named by the verifier. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"
#include "lib/base/jchain.h"
#include "unit.h"

static char dir[] = "/tmp/cove-journal.XXXXXX";
static char jdir[64], jpath[128], epath[128];
static struct coved d;

static struct coved_sb *record(void)
{
	struct coved_sb *sb = calloc(1, sizeof(*sb));
	sb->d = &d;
	snprintf(sb->id, sizeof(sb->id), "%s", "j0000000000000000001");
	sb->state = COVED_SB_PAUSED; /* no handle: the egress path is given */
	pthread_mutex_init(&sb->mu, NULL);
	pthread_mutex_init(&sb->jtail.mu, NULL);
	pthread_cond_init(&sb->jtail.grew, NULL);
	sb->jtail.egress_path = strdup(epath);
	return sb;
}

static void unrecord(struct coved_sb *sb)
{
	free(sb->jtail.egress_path);
	pthread_mutex_destroy(&sb->mu);
	pthread_mutex_destroy(&sb->jtail.mu);
	pthread_cond_destroy(&sb->jtail.grew);
	free(sb);
}

static void egress(const char *text, int flags)
{
	int fd = open(epath, O_WRONLY | O_CREAT | flags, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static json_t *lines(void)
{
	json_t *a = json_array();
	FILE *f = fopen(jpath, "r");
	char buf[8192];
	while (f && fgets(buf, sizeof(buf), f))
		json_array_append_new(a, json_loads(buf, 0, NULL));
	if (f)
		fclose(f);
	return a;
}

static int verify(struct jchain *c)
{
	jchain_start(c);
	int fd = open(jpath, O_RDONLY);
	int r = jchain_verify_fd(c, fd);
	close(fd);
	return r;
}

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(jdir, sizeof(jdir), "%s/journal", dir);
	mkdir(jdir, 0700);
	snprintf(jpath, sizeof(jpath), "%s/j0000000000000000001.jsonl", jdir);
	snprintf(epath, sizeof(epath), "%s/egress.log", dir);
	d.cfg.state_dir = dir;
}

START_TEST(chain_fold_restart)
{
	setup();
	struct coved_sb *sb = record();
	coved_journal(sb, json_pack("{s:s}", "type", "exec"));
	egress("{\"time\":\"t1\",\"verdict\":\"allow\"}\nnot json\n{\"time\":\"t3\"", O_APPEND);
	coved_journal(sb, json_pack("{s:s, s:i}", "type", "exec", "seq", 99)); /* seq is coved's */
	json_t *a = lines();
	ck_assert_uint_eq(json_array_size(a), 4);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 1), "type")),
	                 "egress");
	json_t *e1 = json_object_get(json_array_get(a, 1), "egress");
	ck_assert_str_eq(json_string_value(json_object_get(e1, "verdict")), "allow");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(a, 2), "egress")),
	                 "not json");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(a, 3), "seq")), 4);
	json_decref(a);
	/* The third decision's line is finished now; a new record (a coved
	 * restart) folds it once and goes on with the chain. */
	egress("}\n", O_APPEND);
	unrecord(sb);
	sb = record();
	uint64_t seq;
	char hash[SHA256_HEX];
	coved_journal_tail(sb, &seq, hash);
	ck_assert_uint_eq(seq, 4);
	coved_journal_event(sb, "adopted", NULL);
	coved_journal_fold(sb);
	a = lines();
	ck_assert_uint_eq(json_array_size(a), 6);
	ck_assert_str_eq(json_string_value(json_object_get(
	                     json_object_get(json_array_get(a, 4), "egress"), "time")),
	                 "t3");
	json_decref(a);
	/* Emptied (as a reader may): read from its start again. */
	egress("{\"time\":\"t4\"}\n", O_TRUNC);
	coved_journal_fold(sb);
	a = lines();
	ck_assert_uint_eq(json_array_size(a), 7);
	json_decref(a);
	struct jchain c;
	ck_assert_int_eq(verify(&c), 0);
	ck_assert_uint_eq(c.lines, 7);
	coved_journal_tail(sb, &seq, hash);
	ck_assert_str_eq(hash, c.hash);
	unrecord(sb);

	/* A torn last line: ended at the next start, named by the verifier,
	 * and the chain goes on after it. */
	int fd = open(jpath, O_WRONLY | O_APPEND);
	ck_assert_int_eq(write(fd, "{\"seq\":8", 8), 8);
	close(fd);
	sb = record();
	coved_journal(sb, json_pack("{s:s}", "type", "exec"));
	ck_assert_int_eq(verify(&c), -1);
	ck_assert_uint_eq(c.bad, 8);
	ck_assert_str_eq(c.why, "not a JSON object");
	unrecord(sb);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_journal");
	TCase *tc = tcase_create("journal");
	tcase_add_test(tc, chain_fold_restart);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
