/* The working-set record's host side (common/wsrec.h): after the first
 * exec of the first restore of a snapshot, cove-vmm writes which guest
 * pages were touched into a file libcove creates in the snapshot directory
 * and passes it; libcove reads the file back, checks it with the same
 * parser every restore uses, and only then renames it to memory.ws.  The
 * jailed cove-vmm never names a path in the snapshot directory. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "lib/base/handle.h"
#include "lib/vmm/prefetch.h"
#include "lib/vmm/vmm_api.h"
#include "wsrec.h"

#define API_WORKING_SET_MS 10000

void prefetch_plan(struct cove_sandbox *sb, const char *snapshot_dir, uint64_t ram_bytes)
{
	const char *v = getenv("COVE_PREFETCH");
	char path[PATH_MAX];
	sb->ws_record = false;
	if ((v && !strcmp(v, "0")) ||
	    snprintf(path, sizeof(path), "%s/%s", snapshot_dir, WSREC_FILE) >= (int)sizeof(path))
		return;
	if (access(path, F_OK) == 0 || errno != ENOENT || access(snapshot_dir, W_OK) != 0)
		return; /* recorded already, or not ours to write */
	snprintf(sb->ws_dir, sizeof(sb->ws_dir), "%s", snapshot_dir);
	sb->ws_ram = ram_bytes;
	sb->ws_record = true;
	sb->ws_take = prefetch_take;
}

/* Reads fd back (at most a record's size) and checks it. */
static int check_back(int fd, uint64_t ram_bytes, uint32_t *ranges)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < WSREC_HDR || st.st_size > WSREC_MAX_BYTES)
		return -EINVAL;
	size_t len = (size_t)st.st_size;
	uint8_t *buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	struct wsrec w;
	int r = pread_all(fd, buf, len, 0);
	if (r == 0)
		r = wsrec_parse(buf, len, ram_bytes, &w, NULL, 0);
	free(buf);
	if (r == 0) {
		*ranges = w.count;
		wsrec_free(&w);
	}
	return r;
}

int prefetch_take(struct cove_sandbox *sb, char *err, size_t errlen)
{
	if (!sb->ws_record)
		return 0;
	sb->ws_record = false; /* one try per sandbox */
	char tmp[PATH_MAX], final[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", sb->ws_dir, WSREC_FILE) >=
	        (int)sizeof(tmp) ||
	    snprintf(final, sizeof(final), "%s/%s", sb->ws_dir, WSREC_FILE) >= (int)sizeof(final))
		return errf(err, errlen, -ENAMETOOLONG, "snapshot path too long");
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "cannot create %s: %s", tmp, strerror(errno));
	uint32_t ranges = 0;
	int r = vmm_api_call_fd(sb->api, json_pack("{s:s}", "op", "working_set"), fd, NULL,
	                        API_WORKING_SET_MS, err, errlen);
	if (r == 0 && (r = check_back(fd, sb->ws_ram, &ranges)) < 0)
		errf(err, errlen, r, "cove-vmm's working-set record is not valid");
	if (r == 0 && fchmod(fd, 0400) < 0)
		r = errf(err, errlen, -errno, "chmod %s: %s", tmp, strerror(errno));
	close(fd);
	/* A fork that recorded at the same time may have won: either is good. */
	if (r == 0 && rename(tmp, final) < 0)
		r = errf(err, errlen, -errno, "cannot rename %s: %s", tmp, strerror(errno));
	if (r < 0)
		unlink(tmp);
	return r;
}
