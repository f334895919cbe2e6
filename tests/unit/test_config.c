/* Unit tests: libcove's configuration (lib/config.c): the defaults name
 * common/cove_limits.h, and cove_start refuses sizes out of its bounds
 * with cove-vmm's wording before it creates anything, while a restore
 * (whose sizes come from the snapshot) does not look at them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cove.h"
#include "cove_limits.h"
#include "lib/config.h"
#include "unit.h"

/* A runtime base that does not exist: cove_start must not create it. */
static char base[64];

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/cove-ut-config-%d", (int)getpid());
	setenv("COVE_RUNTIME_DIR", base, 1);
}

static void teardown(void)
{
	rmdir(base);
	unsetenv("COVE_RUNTIME_DIR");
}

START_TEST(defaults_name_the_limits)
{
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	ck_assert_uint_eq(cfg.cpus, COVE_CPUS_DEFAULT);
	ck_assert_uint_eq(cfg.memory_mib, COVE_MEMORY_DEFAULT_MIB);
	ck_assert_uint_eq(config_boot_timeout_ms(&cfg), cfg.boot_timeout_ms);
	cfg.boot_timeout_ms = 0;
	ck_assert_uint_eq(config_boot_timeout_ms(&cfg), 60000);
}
END_TEST

START_TEST(sizes_within_bounds)
{
	char err[128] = "";
	ck_assert_int_eq(config_check_sizes(0, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(config_check_sizes(1, COVE_MEMORY_MIN_MIB, err, sizeof(err)), 0);
	ck_assert_int_eq(config_check_sizes(COVE_CPUS_MAX, 1ULL << 20, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(sizes_out_of_bounds)
{
	char err[128];
	ck_assert_int_eq(config_check_sizes(1, COVE_MEMORY_MIN_MIB - 1, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "memory must be at least 32 MiB, got 31");
	ck_assert_int_eq(config_check_sizes(0, 1, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "memory must be at least 32 MiB, got 1");
	ck_assert_int_eq(config_check_sizes(COVE_CPUS_MAX + 1, 0, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "cpus must be between 1 and 64, got 65");
	/* No message buffer: still the error. */
	ck_assert_int_eq(config_check_sizes(1, 16, NULL, 0), -EINVAL);
}
END_TEST

/* The defaults with these sizes. */
static struct cove_config sized(unsigned int cpus, uint64_t memory_mib)
{
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	cfg.cpus = cpus;
	cfg.memory_mib = memory_mib;
	return cfg;
}

START_TEST(start_refuses_before_anything)
{
	struct cove_config cfg = sized(1, 16);
	cfg.name = "too-small";
	char err[256];
	struct cove_sandbox *sb = NULL;
	ck_assert_int_eq(cove_start(&cfg, &sb, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(sb);
	ck_assert_str_eq(err, "memory must be at least 32 MiB, got 16");
	cfg = sized(1000, 0);
	ck_assert_int_eq(cove_start(&cfg, &sb, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "cpus must be between 1 and 64, got 1000");
	/* Not even the runtime directory was made. */
	ck_assert_int_eq(access(base, F_OK), -1);
}
END_TEST

START_TEST(restore_ignores_sizes)
{
	struct cove_config cfg = sized(1000, 16);
	cfg.vmm = "/nonexistent/cove-vmm";
	char err[256];
	/* It stops at /dev/kvm or at the missing cove-vmm, not at the sizes. */
	int r = config_check(&cfg, false, err, sizeof(err));
	ck_assert_msg(r == -ENODEV || r == -ENOENT, "config_check: %d (%s)", r, err);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults_name_the_limits);
	tcase_add_test(tc, sizes_within_bounds);
	tcase_add_test(tc, sizes_out_of_bounds);
	tcase_add_test(tc, start_refuses_before_anything);
	tcase_add_test(tc, restore_ignores_sizes);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
