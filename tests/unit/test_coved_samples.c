/* Unit tests: getMetrics' samples (daemon/sandboxes/samples.c): the ring's
 * bound and order, the CPU share between readings (a loop on one of two
 * vCPUs is 50%, a counter that went back after a resume is 0), the
 * ?start=&end= range and the SandboxMetric JSON; and the readings under
 * them (lib/usage.c, lib/base/cgroup.c): cgroup keyed files and a
 * process's /proc texts. */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "daemon/sandboxes/samples.h"
#include "lib/base/cgroup.h"
#include "lib/usage.h"
#include "unit.h"

START_TEST(cpu_share)
{
	ck_assert(coved_cpu_pct(1000000, 1000000, 1) == 100.0);
	ck_assert(coved_cpu_pct(1000000, 1000000, 2) == 50.0);
	ck_assert(coved_cpu_pct(500000, 2000000, 1) == 25.0);
	ck_assert(coved_cpu_pct(1, 3, 1) == 33.33);
	ck_assert(coved_cpu_pct(2, 3, 1) == 66.67);
	ck_assert(coved_cpu_pct(5000000, 1000000, 2) == 100.0); /* VMM threads beyond */
	ck_assert(coved_cpu_pct(5, 0, 2) == 0.0);
	ck_assert(coved_cpu_pct(5, 10, 0) == 0.0);

	struct coved_ring *r = calloc(1, sizeof(*r));
	ck_assert(coved_ring_cpu(r, 10000000, 1000000, 2) == 0.0); /* the first: nothing before */
	ck_assert(coved_ring_cpu(r, 11000000, 3000000, 2) == 25.0);
	ck_assert(coved_ring_cpu(r, 15000000, 5000000, 2) == 100.0);
	/* A new VMM (resumed): its counter starts again. */
	ck_assert(coved_ring_cpu(r, 100, 7000000, 2) == 0.0);
	ck_assert(coved_ring_cpu(r, 2000100, 9000000, 2) == 50.0);
	/* A reading no later than the last. */
	ck_assert(coved_ring_cpu(r, 3000000, 9000000, 2) == 0.0);
	free(r);
}
END_TEST

START_TEST(ring_bound_and_order)
{
	struct coved_ring *r = calloc(1, sizeof(*r));
	for (int i = 0; i < COVED_SAMPLES_MAX + 10; i++) {
		struct coved_sample s = { .t_ms = (int64_t)i * 1000, .cpus = 1 };
		coved_ring_push(r, &s);
		ck_assert_uint_eq(r->n, i < COVED_SAMPLES_MAX ? (size_t)i + 1 : COVED_SAMPLES_MAX);
	}
	ck_assert_int_eq(coved_ring_at(r, 0)->t_ms, 10000);
	ck_assert_int_eq(coved_ring_at(r, COVED_SAMPLES_MAX - 1)->t_ms,
	                 (int64_t)(COVED_SAMPLES_MAX + 9) * 1000);
	for (size_t i = 1; i < r->n; i++)
		ck_assert_int_gt(coved_ring_at(r, i)->t_ms, coved_ring_at(r, i - 1)->t_ms);
	/* The range picks whole seconds, both ends in. */
	json_t *a = coved_ring_json(r, 100, 104);
	ck_assert_uint_eq(json_array_size(a), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(a, 0), "timestampUnix")),
	                 100);
	json_decref(a);
	a = coved_ring_json(r, 0, 0);
	ck_assert_uint_eq(json_array_size(a), COVED_SAMPLES_MAX);
	json_decref(a);
	a = coved_ring_json(NULL, 0, 0);
	ck_assert_uint_eq(json_array_size(a), 0);
	json_decref(a);
	free(r);
}
END_TEST

START_TEST(sample_json_fields)
{
	struct coved_ring *r = calloc(1, sizeof(*r));
	struct coved_sample s = { .t_ms = 1700000000123,
		                  .cpu_pct = 42.5,
		                  .cpus = 2,
		                  .mem_used = 1 << 20,
		                  .mem_total = 512ull << 20,
		                  .mem_cache = 4096,
		                  .disk_used = 8192,
		                  .disk_total = 1ull << 30,
		                  .net_rx = 1234,
		                  .net_tx = 5ull << 32 };
	coved_ring_push(r, &s);
	json_t *a = coved_ring_json(r, 0, 0);
	json_t *o = json_array_get(a, 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "timestamp")),
	                 "2023-11-14T22:13:20.123Z");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "timestampUnix")), 1700000000);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "cpuCount")), 2);
	ck_assert(json_real_value(json_object_get(o, "cpuUsedPct")) == 42.5);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "memUsed")), 1 << 20);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "memTotal")), 512ll << 20);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "memCache")), 4096);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "diskUsed")), 8192);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "diskTotal")), 1ll << 30);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "netRxBytes")), 1234);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "netTxBytes")), 5ll << 32);
	json_decref(a);
	free(r);
}
END_TEST

START_TEST(range_parse)
{
	int64_t s, e;
	char err[128];
	ck_assert_int_eq(coved_metrics_range(NULL, NULL, &s, &e, err, sizeof(err)), 0);
	ck_assert(s == 0 && e == 0);
	ck_assert_int_eq(coved_metrics_range("100", "", &s, &e, err, sizeof(err)), 0);
	ck_assert(s == 100 && e == 0);
	ck_assert_int_eq(coved_metrics_range("100", "200", &s, &e, err, sizeof(err)), 0);
	ck_assert(s == 100 && e == 200);
	ck_assert_int_eq(coved_metrics_range("200", "100", &s, &e, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "before"));
	ck_assert_int_eq(coved_metrics_range("-1", NULL, &s, &e, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(coved_metrics_range("1.5", NULL, &s, &e, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(
	    coved_metrics_range(NULL, "99999999999999999999999", &s, &e, err, sizeof(err)),
	    -EINVAL);
	ck_assert_int_eq(coved_metrics_range("253402300800", NULL, &s, &e, err, sizeof(err)),
	                 -EINVAL);
}
END_TEST

START_TEST(readings)
{
	uint64_t v;
	const char *cpu = "usage_usec 123456\nuser_usec 100\nsystem_usec 23456\n";
	ck_assert_int_eq(cgroup_keyed_u64(cpu, "usage_usec", &v), 0);
	ck_assert_uint_eq(v, 123456);
	ck_assert_int_eq(cgroup_keyed_u64(cpu, "system_usec", &v), 0);
	ck_assert_uint_eq(v, 23456);
	ck_assert_int_eq(cgroup_keyed_u64(cpu, "usage", &v), -ENOENT);
	ck_assert_int_eq(cgroup_keyed_u64("anon 5\nfile 77", "file", &v), 0);
	ck_assert_uint_eq(v, 77);
	ck_assert_int_eq(cgroup_keyed_u64("file x\n", "file", &v), -ENOENT);
	ck_assert_int_eq(cgroup_keyed_u64("", "file", &v), -ENOENT);

	uint64_t cpu_us, rss;
	const char *stat = "4242 (cove vmm) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 "
	                   "250 50 0 0 20 0 3 0 1000 0 0";
	const char *status = "Name:\tcove-vmm\nVmPeak:\t 9 kB\nVmRSS:\t  2048 kB\nThreads: 3\n";
	ck_assert_int_eq(cove_proc_usage_parse(stat, status, 100, &cpu_us, &rss), 0);
	ck_assert_uint_eq(cpu_us, 3000000); /* 300 ticks at 100 Hz */
	ck_assert_uint_eq(rss, 2048 * 1024);
	ck_assert_int_eq(cove_proc_usage_parse("4242 cove S", status, 100, &cpu_us, &rss), -EINVAL);
	ck_assert_int_eq(cove_proc_usage_parse(stat, "Name: x\n", 100, &cpu_us, &rss), -EINVAL);
	ck_assert_int_eq(cove_proc_usage_parse(stat, status, 0, &cpu_us, &rss), -EINVAL);

	/* A link's byte counters (/sys/class/net/cvK/statistics/rx_bytes). */
	ck_assert_int_eq(kfile_u64_parse("123456\n", &v), 0);
	ck_assert_uint_eq(v, 123456);
	ck_assert_int_eq(kfile_u64_parse("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(kfile_u64_parse("18446744073709551616\n", &v), -EINVAL);
	ck_assert_int_eq(kfile_u64_parse("", &v), -EINVAL);
	ck_assert_int_eq(kfile_u64_parse("-1\n", &v), -EINVAL);
	ck_assert_int_eq(kfile_u64_parse("12 34\n", &v), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_samples");
	TCase *tc = tcase_create("samples");
	tcase_add_test(tc, cpu_share);
	tcase_add_test(tc, ring_bound_and_order);
	tcase_add_test(tc, sample_json_fields);
	tcase_add_test(tc, range_parse);
	tcase_add_test(tc, readings);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
