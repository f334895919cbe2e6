/* Shared boilerplate for Check unit tests: each test file defines
 * `static Suite *make_suite(void)` and ends with UNIT_MAIN(). */
#ifndef COVE_UNIT_H
#define COVE_UNIT_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* unit_write_tmp() - @text in a new file under /tmp with @mode; its path
 * (a static buffer: the next call reuses it).  The caller unlinks it. */
static inline char *unit_write_tmp(const char *text, mode_t mode)
{
	static char path[64];
	snprintf(path, sizeof(path), "/tmp/cove-unit.XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	fchmod(fd, mode);
	close(fd);
	return path;
}

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
