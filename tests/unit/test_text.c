/* Unit tests: guest text made safe for a terminal (lib/text.c): the
 * cleaning of messages cove prints, the streaming filter of a command's
 * output (SGR colour kept, every other escape sequence dropped, across
 * chunk boundaries), and RFC 1123 host names. */
#include <stdio.h>
#include <string.h>

#include "lib/base/text.h"
#include "unit.h"

static void clean_is(const char *in, const char *want)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", in);
	text_clean(buf);
	ck_assert_str_eq(buf, want);
}

START_TEST(clean)
{
	clean_is("plain text\tand\nlines", "plain text\tand\nlines");
	clean_is("a\x1b[2Jb", "a?b");
	clean_is("t\x1b]0;title\x07x", "t?x");
	clean_is("t\x1b]52;c;aGk=\x1b\\x", "t?x");
	clean_is("bell\x07 del\x7f cr\r", "bell? del? cr?");
	clean_is("c1 \xc2\x9b"
	         "6n",
	         "c1 ?6n");
	clean_is("utf8 \xc3\xa9 ok", "utf8 \xc3\xa9 ok");
	clean_is("end\x1b", "end?");
	clean_is("cut\x1b[12", "cut?");
}
END_TEST

static void filter_is(const char *in, size_t cut, const char *want)
{
	struct text_filter f;
	text_filter_init(&f);
	char out[512];
	size_t len = strlen(in);
	size_t n = text_filter(&f, (const unsigned char *)in, cut, out, sizeof(out));
	n += text_filter(&f, (const unsigned char *)in + cut, len - cut, out + n, sizeof(out) - n);
	out[n] = 0;
	ck_assert_str_eq(out, want);
}

START_TEST(filter)
{
	const char *colour = "\x1b[1;31mred\x1b[0m plain";
	for (size_t cut = 0; cut <= strlen(colour); cut++)
		filter_is(colour, cut, colour);
	const char *bad = "a\x1b[2Jb\x1b[6nc\x1b]0;t\x07"
	                  "d\x1b]52;c;aGk=\x1b\\e\x1b"
	                  "cf\xc2\x9bg";
	for (size_t cut = 0; cut <= strlen(bad); cut++)
		filter_is(bad, cut, "abcdef?g");
	filter_is("progress 10%\rprogress 20%\b\n", 3, "progress 10%\rprogress 20%\b\n");
	filter_is("caf\xc3\xa9", 3, "caf\xc3\xa9");
	/* SGR with something else than digits: not colour, dropped. */
	filter_is("x\x1b[?25my", 1, "xy");
}
END_TEST

START_TEST(hostnames)
{
	ck_assert(text_hostname_valid("cove"));
	ck_assert(text_hostname_valid("a-b.example.org"));
	ck_assert(text_hostname_valid("x1"));
	char l63[64], l64[65], big[300];
	memset(l63, 'a', 63);
	l63[63] = 0;
	memset(l64, 'a', 64);
	l64[64] = 0;
	ck_assert(text_hostname_valid(l63));
	ck_assert(!text_hostname_valid(l64));
	for (int i = 0; i < 254; i++)
		big[i] = i % 2 ? '.' : 'a';
	big[253] = 0; /* 253 bytes: "a.a. ... a" */
	ck_assert(text_hostname_valid(big));
	big[253] = 'a';
	big[254] = 0;
	ck_assert(!text_hostname_valid(big));
	ck_assert(!text_hostname_valid(""));
	ck_assert(!text_hostname_valid("-a"));
	ck_assert(!text_hostname_valid("a-"));
	ck_assert(!text_hostname_valid("a..b"));
	ck_assert(!text_hostname_valid("a.b."));
	ck_assert(!text_hostname_valid("a_b"));
	ck_assert(!text_hostname_valid("a b"));
	ck_assert(!text_hostname_valid("x init=/bin/sh"));
	ck_assert(!text_hostname_valid(NULL));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("text");
	TCase *tc = tcase_create("text");
	tcase_add_test(tc, clean);
	tcase_add_test(tc, filter);
	tcase_add_test(tc, hostnames);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
