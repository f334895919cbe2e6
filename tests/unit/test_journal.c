/* Unit tests: the journal's hash chain (lib/base/jchain.c) on synthetic
 * journals of 100 exec lines: whole as written; one line edited by hand,
 * removed, inserted, or the end cut, and the verifier names the first
 * broken line and why; an anchor catches an edit of the last line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/jchain.h"
#include "unit.h"

#define NLINES 100

static char *lines[NLINES + 1]; /* 1-based, without newlines */

/* Builds the journal coved would write: seq 1..100, each prev the hash of
 * the line before. */
static void build(void)
{
	char prev[SHA256_HEX];
	memset(prev, '0', SHA256_HEX - 1);
	prev[SHA256_HEX - 1] = 0;
	for (int i = 1; i <= NLINES; i++) {
		ck_assert_int_gt(
		    asprintf(&lines[i],
		             "{\"seq\":%d,\"prev\":\"%s\",\"ts\":\"2026-12-03T10:00:%02d."
		             "000Z\",\"type\":\"exec\",\"cmd\":\"echo\",\"args\":[\"%d\"],"
		             "\"exit_code\":0}",
		             i, prev, i % 60, i),
		    0);
		jchain_hash(lines[i], strlen(lines[i]), prev);
	}
}

static void unbuild(void)
{
	for (int i = 1; i <= NLINES; i++) {
		free(lines[i]);
		lines[i] = NULL;
	}
}

/* The journal's bytes with line skip left out (0: none), after line
 * after_line the text extra (NULL: none), ending with a newline unless torn. */
static char *join(int skip, int after_line, const char *extra, bool torn)
{
	size_t cap = 1 << 20, n = 0;
	char *b = malloc(cap);
	for (int i = 1; i <= NLINES; i++) {
		if (i != skip)
			n += (size_t)snprintf(b + n, cap - n, "%s\n", lines[i]);
		if (i == after_line && extra)
			n += (size_t)snprintf(b + n, cap - n, "%s\n", extra);
	}
	if (torn)
		b[--n] = 0;
	return b;
}

static int verify(const char *b, struct jchain *c)
{
	if (!c->anchor_seq)
		jchain_start(c);
	return jchain_verify(c, b, strlen(b));
}

START_TEST(whole)
{
	build();
	char *b = join(0, 0, NULL, false);
	struct jchain c = { 0 };
	ck_assert_int_eq(verify(b, &c), 0);
	ck_assert_uint_eq(c.lines, NLINES);
	ck_assert_uint_eq(c.seq, NLINES);
	ck_assert_uint_eq(c.bad, 0);
	free(b);
	jchain_start(&c);
	ck_assert_int_eq(jchain_verify(&c, "", 0), 0);
	unbuild();
}
END_TEST

START_TEST(edited)
{
	build();
	/* An exit code changed by hand on line 57. */
	char *p = strstr(lines[57], "\"exit_code\":0");
	p[strlen("\"exit_code\":")] = '1';
	char *b = join(0, 0, NULL, false);
	struct jchain c = { 0 };
	ck_assert_int_eq(verify(b, &c), -1);
	ck_assert_uint_eq(c.bad, 57);
	ck_assert_ptr_nonnull(strstr(c.why, "was changed"));
	free(b);
	unbuild();
}
END_TEST

START_TEST(removed_inserted)
{
	build();
	struct jchain c = { 0 };
	char *b = join(30, 0, NULL, false);
	ck_assert_int_eq(verify(b, &c), -1);
	ck_assert_uint_eq(c.bad, 30); /* line 30 now holds seq 31 */
	ck_assert_ptr_nonnull(strstr(c.why, "seq is 31 where 30"));
	free(b);
	b = join(0, 10,
	         "{\"seq\":11,\"prev\":\"0000000000000000000000000000000000000000000000"
	         "000000000000000000\"}",
	         false);
	ck_assert_int_eq(verify(b, &c), -1);
	ck_assert_uint_eq(c.bad, 10); /* line 10 does not hash to the inserted prev */
	free(b);
	b = join(0, 20, "not json", false);
	ck_assert_int_eq(verify(b, &c), -1);
	ck_assert_uint_eq(c.bad, 21);
	ck_assert_str_eq(c.why, "not a JSON object");
	free(b);
	b = join(1, 0, NULL, false); /* the first line gone */
	ck_assert_int_eq(verify(b, &c), -1);
	ck_assert_uint_eq(c.bad, 1);
	free(b);
	unbuild();
}
END_TEST

START_TEST(torn_and_anchored)
{
	build();
	struct jchain c = { 0 };
	char *b = join(0, 0, NULL, true);
	ck_assert_int_eq(verify(b, &c), -1);
	ck_assert_uint_eq(c.bad, NLINES);
	ck_assert_ptr_nonnull(strstr(c.why, "torn"));
	free(b);
	/* The last line edited: only the anchor (coved's own tail) sees it. */
	char h[SHA256_HEX];
	jchain_hash(lines[NLINES], strlen(lines[NLINES]), h);
	lines[NLINES][strlen(lines[NLINES]) - 2] = '7';
	b = join(0, 0, NULL, false);
	ck_assert_int_eq(verify(b, &c), 0);
	jchain_start(&c);
	c.anchor_seq = NLINES;
	memcpy(c.anchor_hash, h, SHA256_HEX);
	ck_assert_int_eq(verify(b, &c), -1);
	ck_assert_uint_eq(c.bad, NLINES);
	free(b);
	/* The end cut: two lines fewer than coved wrote. */
	b = join(0, 0, NULL, false);
	*strstr(b, lines[NLINES - 1]) = 0;
	jchain_start(&c);
	c.anchor_seq = NLINES;
	memcpy(c.anchor_hash, h, SHA256_HEX);
	ck_assert_int_eq(verify(b, &c), -1);
	ck_assert_uint_eq(c.bad, NLINES - 1);
	ck_assert_ptr_nonnull(strstr(c.why, "cut"));
	free(b);
	unbuild();
}
END_TEST

START_TEST(tail_seq)
{
	ck_assert_uint_eq(jchain_tail_seq("{\"seq\":42}", 10), 42);
	ck_assert_uint_eq(jchain_tail_seq("{\"seq\":-1}", 10), 0);
	ck_assert_uint_eq(jchain_tail_seq("{\"seq\":4", 8), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("chain");
	tcase_add_test(tc, whole);
	tcase_add_test(tc, edited);
	tcase_add_test(tc, removed_inserted);
	tcase_add_test(tc, torn_and_anchored);
	tcase_add_test(tc, tail_seq);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
