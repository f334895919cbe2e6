/* Small files the agent writes in the guest (file.h). */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"

int agent_write_file(const char *path, const char *const *parts, const size_t *lens, int n)
{
	char tmp[512];
	if (snprintf(tmp, sizeof(tmp), "%s.cove.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = 0;
	for (int i = 0; i < n && !r; i++)
		r = write_all(fd, parts[i], lens[i]);
	if (!r && fchmod(fd, 0644) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	return r;
}
