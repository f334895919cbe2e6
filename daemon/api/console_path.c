/* The console's request paths (console_path.h). */
#include "daemon/api/console_path.h"

#include <stdio.h>
#include <string.h>

#define NAME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789._-"

enum coved_console_kind coved_console_path(const char *url, char *name, size_t namelen)
{
	if (strncmp(url, "/ui", 3) != 0)
		return CONSOLE_NONE;
	if (url[3] == 0)
		return CONSOLE_REDIRECT;
	if (url[3] != '/')
		return CONSOLE_NONE; /* "/uix": another route's */
	const char *f = url + 4;
	if (*f == 0)
		f = "index.html";
	size_t n = strlen(f);
	if (namelen == 0 || n >= namelen || strspn(f, NAME_CHARS) != n || f[0] == '.')
		return CONSOLE_MISSING;
	memcpy(name, f, n + 1);
	return CONSOLE_FILE;
}
