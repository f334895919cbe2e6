/* cove cp: copies one file into or out of a named sandbox.  The sandbox's
 * side is NAME:PATH; a local directory as destination receives the file
 * under its own name, and so does a guest path ending in '/'. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cp.h"
#include "cove.h"

static const char cp_usage[] =
    "usage: cove cp [--max-size N[K|M|G]] NAME:PATH LOCAL\n"
    "       cove cp LOCAL NAME:PATH\n"
    "  --max-size: refuse a file from the sandbox larger than this (default 4G);\n"
    "  its mode there becomes mode & 0755 & ~umask here\n";

/* "N", "NK", "NM", "NG" (powers of 1024) -> bytes; -1 when malformed or
 * over 2^62. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	int shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	else if (*end)
		return -1;
	if (shift && end[1])
		return -1;
	if (v > (1ull << 62) >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* NAME:PATH -> name and path; false when arg is a local path (no ':', or
 * what precedes it is no sandbox name: write ./a:b for a local "a:b"). */
static bool split_remote(const char *arg, char *name, const char **path)
{
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg || (size_t)(colon - arg) > COVE_NAME_MAX)
		return false;
	memcpy(name, arg, (size_t)(colon - arg));
	name[colon - arg] = 0;
	if (!cove_name_valid(name))
		return false;
	*path = colon + 1;
	return true;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

int cli_cp(int argc, char **argv)
{
	const char *prog = "cove cp";
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(cp_usage, stdout);
		return 0;
	}
	uint64_t max = COVE_GET_MAX_DEFAULT;
	if (argc >= 2 && !strncmp(argv[1], "--max-size", 10)) {
		const char *v = argv[1][10] == '=' ? argv[1] + 11 : argv[1][10] ? NULL : argv[2];
		if (!v || parse_size(v, &max) < 0) {
			fprintf(stderr,
			        "%s: --max-size needs a size such as 4096, 64M or 4G, got '%s'\n",
			        prog, v ? v : argv[1]);
			return 2;
		}
		int used = argv[1][10] == '=' ? 1 : 2;
		argc -= used;
		argv += used;
	}
	if (argc != 3) {
		fprintf(stderr, "%s: needs a source and a destination\n%s", prog, cp_usage);
		return 2;
	}
	char src_name[COVE_NAME_MAX + 1], dst_name[COVE_NAME_MAX + 1];
	const char *src_path, *dst_path;
	bool src_remote = split_remote(argv[1], src_name, &src_path);
	bool dst_remote = split_remote(argv[2], dst_name, &dst_path);
	if (src_remote == dst_remote) {
		fprintf(stderr,
		        "%s: exactly one side must be NAME:PATH, the other a local path\n%s", prog,
		        cp_usage);
		return 2;
	}
	const char *name = src_remote ? src_name : dst_name;
	const char *guest = src_remote ? src_path : dst_path;
	const char *local = src_remote ? argv[2] : argv[1];
	if (!*guest || !*local) {
		fprintf(stderr, "%s: empty path\n%s", prog, cp_usage);
		return 2;
	}
	char path[PATH_MAX];
	struct stat st;
	if (src_remote && stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (snprintf(path, sizeof(path), "%s/%s", local, base_name(guest)) >=
		    (int)sizeof(path)) {
			fprintf(stderr, "%s: path too long\n", prog);
			return 1;
		}
		local = path;
	} else if (!src_remote && guest[strlen(guest) - 1] == '/') {
		if (snprintf(path, sizeof(path), "%s%s", guest, base_name(local)) >=
		    (int)sizeof(path)) {
			fprintf(stderr, "%s: path too long\n", prog);
			return 1;
		}
		guest = path;
	}
	char err[512];
	struct cove_sandbox *sb;
	if (cove_open(name, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	int r = src_remote ? cove_get_file_max(sb, guest, local, max, err, sizeof(err))
	                   : cove_put_file(sb, local, guest, 0, err, sizeof(err));
	cove_free(sb);
	if (r < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, src_remote ? argv[1] : argv[2], err);
		return 1;
	}
	return 0;
}
