/* Which console file a request path names (pure: unit-tested, fuzzed). */
#ifndef COVED_API_CONSOLE_PATH_H
#define COVED_API_CONSOLE_PATH_H

#include <stddef.h>

enum coved_console_kind {
	CONSOLE_NONE,     /* not under /ui */
	CONSOLE_REDIRECT, /* "/ui": to "/ui/" */
	CONSOLE_FILE,     /* a file's name in *name (NUL-ended, in the caller's buffer) */
	CONSOLE_MISSING,  /* under /ui/ but no file name could be (a folder, "..") */
};

/* coved_console_path() - what url (the decoded path, without the query)
 * names: "/ui/" is index.html; "/ui/NAME" is NAME when it is 1 to
 * namelen-1 of [a-z0-9._-] and does not start with '.'. */
enum coved_console_kind coved_console_path(const char *url, char *name, size_t namelen);

#endif
