/* Shared boilerplate for Check unit tests: each test file defines
 * `static Suite *make_suite(void)` and ends with UNIT_MAIN(). */
#ifndef COVE_UNIT_H
#define COVE_UNIT_H

#include <check.h>
#include <stdlib.h>

#define UNIT_MAIN()                                          \
	int main(void)                                       \
	{                                                    \
		SRunner *sr = srunner_create(make_suite());  \
		srunner_run_all(sr, CK_NORMAL);              \
		int failed = srunner_ntests_failed(sr);      \
		srunner_free(sr);                            \
		return failed ? EXIT_FAILURE : EXIT_SUCCESS; \
	}

#endif
