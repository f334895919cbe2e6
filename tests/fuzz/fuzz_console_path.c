/* libFuzzer target: a request path through the console's file lookup
 * (daemon/api/console_path.c).  A file name it yields is one flat,
 * plain name that fits the buffer: never "..", a dot file, a folder or a
 * byte outside [a-z0-9._-]. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/console_path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *url = malloc(size + 1);
	if (!url)
		return 0;
	memcpy(url, data, size);
	url[size] = 0;
	char name[32];
	memset(name, 'Z', sizeof(name));
	enum coved_console_kind k = coved_console_path(url, name, sizeof(name));
	if (k == CONSOLE_FILE) {
		size_t n = strlen(name);
		assert(n > 0 && n < sizeof(name));
		assert(name[0] != '.');
		assert(strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n);
		assert(strncmp(url, "/ui/", 4) == 0);
	} else if (k != CONSOLE_NONE) {
		assert(strncmp(url, "/ui", 3) == 0);
	}
	free(url);
	return 0;
}
