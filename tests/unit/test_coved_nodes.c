/* Unit tests: GET /nodes' answer (daemon/api/nodes.c) from the cluster's
 * status: each node's capacity, commitment, lease and draining under the
 * console's names; its address, templates and sandbox counts (other
 * tenants') left out; a malformed entry skipped; no "nodes", NULL. */
#include <jansson.h>

#include "daemon/api/nodes.h"
#include "unit.h"

START_TEST(projection)
{
	json_t *st = json_loads(
	    "{\"node\": \"n1\", \"nodes\": ["
	    "{\"id\": \"n1\", \"addr\": \"10.0.0.1:8080\", \"version\": \"1\", \"state\": "
	    "\"ready\","
	    " \"ready\": true, \"draining\": false, \"vcpus\": 16, \"vcpus_committed\": 5,"
	    " \"memory_mib\": 65536, \"memory_mib_committed\": 2048,"
	    " \"sandboxes\": {\"running\": 4, \"paused\": 1}, \"templates\": [\"base\"]},"
	    "{\"id\": \"n2\", \"state\": \"lost\", \"ready\": false, \"draining\": true, "
	    "\"vcpus\": 8,"
	    " \"vcpus_committed\": 0, \"memory_mib\": 1024, \"memory_mib_committed\": 0},"
	    "{\"id\": \"n3\", \"state\": \"ready\", \"ready\": \"yes\", \"draining\": false,"
	    " \"vcpus\": 8, \"vcpus_committed\": 0, \"memory_mib\": 1, \"memory_mib_committed\": "
	    "0},"
	    "7], \"self\": {\"fenced\": false}}",
	    0, NULL);
	ck_assert_ptr_nonnull(st);
	json_t *a = coved_nodes_public(st);
	ck_assert_uint_eq(json_array_size(a), 2);
	json_t *n1 = json_array_get(a, 0), *n2 = json_array_get(a, 1);
	ck_assert_str_eq(json_string_value(json_object_get(n1, "id")), "n1");
	ck_assert(json_is_true(json_object_get(n1, "leaseOk")));
	ck_assert_int_eq(json_integer_value(json_object_get(n1, "vcpusCommitted")), 5);
	ck_assert_int_eq(json_integer_value(json_object_get(n1, "memoryMiB")), 65536);
	ck_assert_int_eq(json_integer_value(json_object_get(n1, "memoryMiBCommitted")), 2048);
	ck_assert_uint_eq(json_object_size(n1), 8);
	ck_assert_ptr_null(json_object_get(n1, "addr"));
	ck_assert_ptr_null(json_object_get(n1, "sandboxes"));
	ck_assert_ptr_null(json_object_get(n1, "templates"));
	ck_assert_str_eq(json_string_value(json_object_get(n2, "state")), "lost");
	ck_assert(json_is_true(json_object_get(n2, "draining")));
	ck_assert(json_is_false(json_object_get(n2, "leaseOk")));
	json_decref(a);
	json_decref(st);
	st = json_loads("{\"node\": \"n1\"}", 0, NULL);
	ck_assert_ptr_null(coved_nodes_public(st));
	json_decref(st);
	ck_assert_ptr_null(coved_nodes_public(NULL));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_nodes");
	TCase *tc = tcase_create("nodes");
	tcase_add_test(tc, projection);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
