/* Unit tests: coved's last hour per tenant (daemon/sandboxes/hourly.c):
 * creates and denials land in their minute and leave after an hour; a
 * slot of an older minute is emptied before reuse; first-exec times give
 * nearest-rank p50/p99 over the last hour, the ring keeps the newest; the
 * journal hook counts a created line, only the first exec after it (from
 * the create's request), deny verdicts only, each under its own tenant. */
#include <jansson.h>
#include <stdlib.h>

#include "clock.h"
#include "daemon/sandboxes/hourly.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"
#include "unit.h"

#define T0 (1700000000000LL - 1700000000000LL % 60000) /* a minute's start */

static json_int_t num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

START_TEST(minutes)
{
	struct coved_hour *h = calloc(1, sizeof(*h));
	coved_hour_create(h, T0);
	coved_hour_create(h, T0 + 59999);
	coved_hour_denial(h, T0 + 60000);
	json_t *o = coved_hour_json(h, T0 + 60000);
	json_t *m = json_object_get(o, "minutes");
	ck_assert_uint_eq(json_array_size(m), 60);
	ck_assert_int_eq(num(json_array_get(m, 59), "t"), (T0 + 60000) / 1000);
	ck_assert_int_eq(num(json_array_get(m, 59), "egressDenied"), 1);
	ck_assert_int_eq(num(json_array_get(m, 58), "creates"), 2);
	ck_assert_int_eq(num(o, "creates"), 2);
	ck_assert_int_eq(num(o, "egressDenied"), 1);
	ck_assert(json_is_null(json_object_get(json_object_get(o, "firstExecMs"), "p50")));
	json_decref(o);
	/* An hour on, the first minute is out of the window... */
	o = coved_hour_json(h, T0 + 60 * 60000);
	ck_assert_int_eq(num(o, "creates"), 0);
	ck_assert_int_eq(num(o, "egressDenied"), 1);
	json_decref(o);
	/* ...and its slot, taken by the new minute, starts from nothing. */
	coved_hour_create(h, T0 + 60 * 60000);
	o = coved_hour_json(h, T0 + 60 * 60000);
	ck_assert_int_eq(num(o, "creates"), 1);
	json_decref(o);
	o = coved_hour_json(NULL, T0);
	ck_assert_int_eq(num(o, "creates"), 0);
	ck_assert_uint_eq(json_array_size(json_object_get(o, "minutes")), 60);
	json_decref(o);
	free(h);
}
END_TEST

START_TEST(first_exec_percentiles)
{
	struct coved_hour *h = calloc(1, sizeof(*h));
	for (int i = 100; i >= 1; i--) /* 1..100 ms, out of order */
		coved_hour_first_exec(h, T0, i);
	coved_hour_first_exec(h, T0, -5); /* a clock step back reads 0 */
	json_t *o = coved_hour_json(h, T0 + 1000);
	json_t *l = json_object_get(o, "firstExecMs");
	ck_assert_int_eq(num(l, "n"), 101);
	ck_assert_int_eq(num(l, "p50"), 50); /* rank 51 of 0,1..100 */
	ck_assert_int_eq(num(l, "p99"), 99);
	json_decref(o);
	/* Older than an hour: not counted. */
	o = coved_hour_json(h, T0 + 60 * 60000);
	ck_assert_int_eq(num(json_object_get(o, "firstExecMs"), "n"), 0);
	json_decref(o);
	/* The ring keeps the newest COVED_HOUR_LAT_MAX. */
	for (int i = 0; i < COVED_HOUR_LAT_MAX; i++)
		coved_hour_first_exec(h, T0 + 2000, 7);
	o = coved_hour_json(h, T0 + 3000);
	l = json_object_get(o, "firstExecMs");
	ck_assert_int_eq(num(l, "n"), COVED_HOUR_LAT_MAX);
	ck_assert_int_eq(num(l, "p99"), 7);
	json_decref(o);
	free(h);
}
END_TEST

static json_t *line(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(j);
	return j;
}

START_TEST(journal_hook)
{
	static struct coved d;
	pthread_mutex_init(&d.m.mu, NULL);
	struct coved_sb *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	a->d = b->d = &d;
	snprintf(a->tenant, sizeof(a->tenant), "ta");
	snprintf(b->tenant, sizeof(b->tenant), "tb");
	const char *lines[] = {
		"{\"type\": \"exec\", \"duration_ms\": 5}", /* before any create: not first */
		"{\"type\": \"lifecycle\", \"event\": \"created\", \"createMs\": 400000}",
		"{\"type\": \"exec\", \"duration_ms\": 10}",
		"{\"type\": \"exec\", \"duration_ms\": 10}", /* the second: not counted */
		"{\"type\": \"egress\", \"egress\": {\"verdict\": \"deny\"}}",
		"{\"type\": \"egress\", \"egress\": {\"verdict\": \"allow\"}}",
		"{\"type\": \"egress\", \"egress\": \"deny\"}", /* not an object */
		"{\"type\": \"lifecycle\", \"event\": \"paused\"}",
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		json_t *j = line(lines[i]);
		coved_hourly_line(a, j);
		json_decref(j);
	}
	json_t *j = line("{\"type\": \"lifecycle\", \"event\": \"created\"}");
	coved_hourly_line(b, j);
	json_decref(j);
	json_t *o = coved_hourly_json(&d, "ta");
	ck_assert_int_eq(num(o, "creates"), 1);
	ck_assert_int_eq(num(o, "egressDenied"), 1);
	json_t *l = json_object_get(o, "firstExecMs");
	ck_assert_int_eq(num(l, "n"), 1);
	/* From the request, 400 s before the created line, to the exec's start. */
	ck_assert_int_ge(num(l, "p50"), 400000 - 10);
	ck_assert_int_lt(num(l, "p50"), 400000 + 60000);
	json_decref(o);
	o = coved_hourly_json(&d, "tb");
	ck_assert_int_eq(num(o, "creates"), 1);
	ck_assert_int_eq(num(o, "egressDenied"), 0);
	ck_assert_int_eq(num(json_object_get(o, "firstExecMs"), "n"), 0);
	json_decref(o);
	o = coved_hourly_json(&d, "nobody");
	ck_assert_int_eq(num(o, "creates"), 0);
	json_decref(o);
	coved_hourly_free(&d);
	ck_assert_ptr_null(d.hourly);
	free(a);
	free(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_hourly");
	TCase *tc = tcase_create("hourly");
	tcase_add_test(tc, minutes);
	tcase_add_test(tc, first_exec_percentiles);
	tcase_add_test(tc, journal_hook);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
