/* Sanitizer builds: the runtime's default options and the report file
 * (sanitize.h).  Empty unless built with -DCOVE_SANITIZE. */
#include "sanitize.h"

#ifdef COVE_SANITIZE

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sanitizer/common_interface_defs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The runtimes read these before main; ASAN_OPTIONS, UBSAN_OPTIONS and
 * LSAN_OPTIONS, where given, come on top.  libcove starts cove-vmm with
 * an empty environment, so for cove-vmm these are what holds:
 *   every report is fatal (halt_on_error), with status 66, which no Cove
 *     binary uses, so a test that expects a failure status cannot take
 *     a report for it;
 *   LeakSanitizer runs at exit (detect_leaks);
 *   a small quarantine (16 MiB, not 256): cove-vmm's cgroup allows its
 *     guest's RAM and 32 MiB more;
 *   no symbolizer: a jailed, filtered cove-vmm can neither start
 *     llvm-symbolizer nor open its own binary by path; frames are
 *     module+offset, and tests/integration/san-report symbolizes them. */
const char *__asan_default_options(void);
const char *__ubsan_default_options(void);
const char *__lsan_default_options(void);

const char *__asan_default_options(void)
{
	return "halt_on_error=1:abort_on_error=0:exitcode=66:detect_leaks=1:"
	       "symbolize=0:color=never:quarantine_size_mb=16";
}

const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:abort_on_error=0:exitcode=66:print_stacktrace=1:"
	       "symbolize=0:color=never";
}

const char *__lsan_default_options(void)
{
	return "exitcode=66:symbolize=0:color=never";
}

static char san_dir[PATH_MAX] = SAN_DIR_DEFAULT;

void san_note_env(void)
{
	const char *d = getenv("COVE_SAN_DIR");
	if (d && d[0] && strlen(d) < sizeof(san_dir))
		snprintf(san_dir, sizeof(san_dir), "%s", d);
}

void san_report_to_file(const char *who)
{
	char path[PATH_MAX + 64];
	if (mkdir(san_dir, 0755) == 0)
		(void)chmod(san_dir, 01777); /* every uid makes its own file */
	snprintf(path, sizeof(path), "%s/%s.XXXXXX", san_dir, who);
	int fd = mkostemp(path, O_CLOEXEC | O_APPEND);
	if (fd < 0) {
		fprintf(stderr, "%s: sanitizer reports stay on stderr: cannot create %s: %s\n", who,
		        path, strerror(errno));
		return;
	}
	(void)fchmod(fd, 0644);
	__sanitizer_set_report_fd((void *)(intptr_t)fd);
}

#else

void san_note_env(void)
{
}

void san_report_to_file(const char *who)
{
	(void)who;
}

#endif
