/* The diff route (diff.h): the work is cove_diff_disk's, through the
 * sandboxes room (coved_sb_diff); a tar is spooled to an unnamed temporary
 * file first, so the file system is thawed before the client reads. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "daemon/api/diff.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/diffsrc.h"

static enum MHD_Result tar_reply(struct coved_sb *sb, struct MHD_Connection *c)
{
	char msg[700];
	FILE *f = tmpfile();
	if (!f)
		return coved_json_error(c, 500, "no temporary file for the tar");
	struct cove_diff *d;
	int st = coved_sb_diff(sb, fileno(f), &d, msg, sizeof(msg));
	cove_diff_free(d);
	struct stat s;
	int fd = -1;
	if (!st && (fflush(f) || fstat(fileno(f), &s) < 0 || (fd = dup(fileno(f))) < 0))
		st = 500, snprintf(msg, sizeof(msg), "tar: %s", strerror(errno));
	fclose(f);
	if (st)
		return coved_json_error(c, (unsigned int)st, msg);
	struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)s.st_size, fd);
	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/x-tar");
	coved_reply_private(r);
	enum MHD_Result ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result coved_diff_reply(struct coved_sb *sb, struct MHD_Connection *c)
{
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	const char *tar = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tar");
	bool text = fmt && !strcmp(fmt, "text");
	if (fmt && !text && strcmp(fmt, "json"))
		return coved_json_error(c, 400, "'format' must be json or text");
	if (tar && strcmp(tar, "0") && strcmp(tar, "1"))
		return coved_json_error(c, 400, "'tar' must be 0 or 1");
	if (tar && !strcmp(tar, "1"))
		return tar_reply(sb, c);
	char msg[700];
	struct cove_diff *d;
	int st = coved_sb_diff(sb, -1, &d, msg, sizeof(msg));
	if (st)
		return coved_json_error(c, (unsigned int)st, msg);
	char *body = text ? fsdiff_text(cove_diff_result(d)) : fsdiff_json(cove_diff_result(d));
	cove_diff_free(d);
	if (!body)
		return coved_json_error(c, 500, "out of memory");
	return coved_text_reply(c, 200, text ? "text/plain; charset=utf-8" : "application/json",
	                        body, strlen(body));
}
