/* Unit tests: the pre-spawned VMM's start request (vmm/pool.c), the
 * --pool flag's checks (vmm/config.c), and the pool's options
 * (lib/pool.c), none of which needs KVM. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "config_flags.h"
#include "cove.h"
#include "pool.h"
#include "unit.h"

static int parse(const char *line, struct vmm_pool_req *req, char *err)
{
	memset(req, 0, sizeof(*req));
	req->conn = req->passed = -1;
	return vmm_pool_parse(line, req, err, 256);
}

START_TEST(request_parsed)
{
	struct vmm_pool_req req;
	char err[256];
	ck_assert_int_eq(
	    parse("{\"op\":\"start\",\"argv\":[\"--restore\",\"/s\",\"--api\",\"/a\"]}", &req, err),
	    0);
	ck_assert_int_eq(req.argc, 5);
	ck_assert_str_eq(req.argv[0], "cove-vmm");
	ck_assert_str_eq(req.argv[2], "/s");
	ck_assert_ptr_null(req.argv[5]);
	vmm_pool_req_free(&req);
	ck_assert_int_eq(parse("{\"op\":\"start\",\"argv\":[]}", &req, err), 0);
	ck_assert_int_eq(req.argc, 1);
	vmm_pool_req_free(&req);
}
END_TEST

START_TEST(request_refused)
{
	struct vmm_pool_req req;
	char err[256];
	static const char *bad[] = {
		"not json",
		"[1]",
		"{\"op\":\"stop\",\"argv\":[]}",
		"{\"argv\":[]}",
		"{\"op\":\"start\"}",
		"{\"op\":\"start\",\"argv\":\"--restore\"}",
		"{\"op\":\"start\",\"argv\":[1]}",
		"{\"op\":\"start\",\"argv\":[\"a\\u0000b\"]}",
		"{\"op\":\"start\",\"argv\":[],\"extra\":1}",
		"{\"op\":\"start\",\"op\":\"start\",\"argv\":[]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		ck_assert_msg(parse(bad[i], &req, err) == -EINVAL, "accepted %s", bad[i]);
		ck_assert_msg(err[0] && !strchr(err, '\n'), "no one-line error for %s", bad[i]);
		ck_assert_ptr_null(req.doc);
	}
	char big[2048];
	size_t n = (size_t)snprintf(big, sizeof(big), "{\"op\":\"start\",\"argv\":[");
	for (int i = 0; i <= VMM_POOL_ARGS_MAX; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"x\"", i ? "," : "");
	snprintf(big + n, sizeof(big) - n, "]}");
	ck_assert_int_eq(parse(big, &req, err), -EINVAL);
}
END_TEST

static int vmm_parse(struct vmm_config *c, char **argv, char *err)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	int r = vmm_config_parse(c, argc, argv, err, 256);
	vmm_config_free(c);
	return r;
}

START_TEST(pool_flag)
{
	struct vmm_config c;
	char err[256];
	char *ok[] = {
		"cove-vmm", "--pool", "2", "--api", "/tmp/x.sock", "--seccomp", "log", NULL
	};
	ck_assert_int_eq(vmm_parse(&c, ok, err), 0);
	ck_assert_uint_eq(c.pool_cpus, 2);
	char *noapi[] = { "cove-vmm", "--pool", "1", NULL };
	ck_assert_int_eq(vmm_parse(&c, noapi, err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--api"));
	char *zero[] = { "cove-vmm", "--pool", "0", "--api", "/a", NULL };
	ck_assert_int_eq(vmm_parse(&c, zero, err), -EINVAL);
	char *many[] = { "cove-vmm", "--pool", "65", "--api", "/a", NULL };
	ck_assert_int_eq(vmm_parse(&c, many, err), -EINVAL);
	char *machine[] = { "cove-vmm", "--pool", "1", "--api", "/a", "--kernel", "/k", NULL };
	ck_assert_int_eq(vmm_parse(&c, machine, err), -EINVAL);
	char *restore[] = { "cove-vmm", "--pool", "1", "--api", "/a", "--restore", "/s", NULL };
	ck_assert_int_eq(vmm_parse(&c, restore, err), -EINVAL);
}
END_TEST

START_TEST(pool_options_checked)
{
	struct cove_vmm_pool *p = NULL;
	char err[256];
	struct cove_vmm_pool_opts o = { .vmm = "/x/cove-vmm", .size = 0, .nshapes = 1 };
	o.cpus[0] = 1;
	ck_assert_int_eq(cove_vmm_pool_new(&o, &p, err, sizeof(err)), -EINVAL);
	o.size = COVE_POOL_SIZE_MAX + 1;
	ck_assert_int_eq(cove_vmm_pool_new(&o, &p, err, sizeof(err)), -EINVAL);
	o.size = 1;
	o.nshapes = 0;
	ck_assert_int_eq(cove_vmm_pool_new(&o, &p, err, sizeof(err)), -EINVAL);
	o.nshapes = 1;
	o.cpus[0] = 0;
	ck_assert_int_eq(cove_vmm_pool_new(&o, &p, err, sizeof(err)), -EINVAL);
	o.cpus[0] = 1;
	o.vmm = "";
	ck_assert_int_eq(cove_vmm_pool_new(&o, &p, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(p);
	/* No pool: stats are zero, free is a no-op. */
	struct cove_vmm_pool_stats s;
	cove_vmm_pool_stats(NULL, &s);
	ck_assert_uint_eq(s.hits + s.misses + s.ready, 0);
	cove_vmm_pool_free(NULL);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("vmm_pool");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, request_parsed);
	tcase_add_test(tc, request_refused);
	tcase_add_test(tc, pool_flag);
	tcase_add_test(tc, pool_options_checked);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
