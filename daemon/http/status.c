/* errno to HTTP status (status.h). */
#include "daemon/http/status.h"

#include <errno.h>
#include <stddef.h>

#define START  HTTP_OP_START
#define RESUME HTTP_OP_RESUME
#define NET    HTTP_OP_NET
#define FILE_  HTTP_OP_FILE

static const struct {
	int err;
	unsigned int status;
	unsigned int ops; /* the operations the row holds for */
} map[] = {
	{ ENOENT, 404, START | RESUME | FILE_ },
	{ EINVAL, 400, START | NET | FILE_ },
	{ ENOTSUP, 400, START | NET },
	{ EISDIR, 400, FILE_ },
	{ ENOTDIR, 400, FILE_ },
	{ ENAMETOOLONG, 400, FILE_ },
	{ EACCES, 403, FILE_ },
	{ EPERM, 403, FILE_ },
	{ EROFS, 403, FILE_ },
	{ ENOSPC, 507, FILE_ },
	{ EDQUOT, 507, FILE_ },
	{ EAGAIN, 503, FILE_ },
};

unsigned int http_status_of(int err, enum http_op op)
{
	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].err == err && (map[i].ops & (unsigned int)op))
			return map[i].status;
	return 500;
}
