/* Unit tests: cove bench --html (cli/bench_html.c): a page with one row
 * per phase that has samples (min, p50, p90, p99, max over the non-NaN
 * ones), QEMU's rows beside Cove's, the image name escaped, and the CDF
 * plot inline; a path that cannot be written is an errno. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench_html.h"
#include "unit.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	char *buf = calloc(1, 1 << 20);
	size_t n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

START_TEST(page)
{
	double ph[4][PH_COUNT], qph[4][PH_COUNT];
	for (int i = 0; i < 4; i++)
		for (int p = 0; p < PH_COUNT; p++) {
			ph[i][p] = p == PH_TEARDOWN ? NAN : 10.0 * (i + 1) + p;
			qph[i][p] = 100.0 + i;
		}
	ph[2][PH_FIRST_EXEC] = NAN; /* one sample without it */
	char path[] = "/tmp/cove-bench-html-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	const struct bench_html_run run = { .mode = "restore",
		                            .image = "<img src=x onerror=alert(1)>",
		                            .cpus = 2,
		                            .memory_mib = 256,
		                            .n = 4 };
	ck_assert_int_eq(bench_html_write(path, &run, ph, NULL), 0);
	char *s = slurp(path);
	ck_assert_ptr_nonnull(strstr(s, "<!doctype html>"));
	ck_assert_ptr_null(strstr(s, "<script"));
	ck_assert_ptr_null(strstr(s, "<img"));
	ck_assert_ptr_nonnull(strstr(s, "&lt;img src=x onerror=alert(1)&gt;"));
	ck_assert_ptr_nonnull(strstr(s, "4 samples, 2 CPU, 256 MiB"));
	/* vmm_start: 10, 20, 30, 40 -> min 10, p50 20 (nearest rank), max 40. */
	ck_assert_ptr_nonnull(
	    strstr(s, "<tr><th>vmm_start</th><td>Cove</td><td>4</td><td>10.0</td>"));
	ck_assert_ptr_nonnull(strstr(s, "<td>40.0</td></tr>"));
	/* first_exec lost a sample; teardown had none and has no row. */
	char want[96];
	snprintf(want, sizeof(want), "<tr><th>%s</th><td>Cove</td><td>3</td>",
	         bench_phase_names[PH_FIRST_EXEC]);
	ck_assert_ptr_nonnull(strstr(s, want));
	snprintf(want, sizeof(want), "<tr><th>%s</th>", bench_phase_names[PH_TEARDOWN]);
	ck_assert_ptr_null(strstr(s, want));
	ck_assert_ptr_nonnull(strstr(s, "<svg "));
	ck_assert_ptr_null(strstr(s, "QEMU microvm</td>"));
	free(s);

	ck_assert_int_eq(bench_html_write(path, &run, ph, qph), 0);
	s = slurp(path);
	ck_assert_ptr_nonnull(strstr(s, "<td>QEMU microvm</td><td>4</td><td>100.0</td>"));
	free(s);
	unlink(path);

	ck_assert_int_eq(bench_html_write("/nonexistent-dir/x.html", &run, ph, NULL), -ENOENT);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("bench_html");
	TCase *tc = tcase_create("page");
	tcase_add_test(tc, page);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
