/* cove diff NAME [--json] [--tar FILE]: the paths a sandbox added, changed
 * and deleted against its template or image (docs/diff.md), as docker
 * diff prints them or as JSON; with --tar, the changed files too. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/diff.h"
#include "cli/options.h"
#include "cove.h"

static const char diff_usage[] =
    "usage: cove diff NAME [--json] [--tar FILE]\n"
    "       cove diff --disk QCOW2 [--base FILE] [--json] [--tar FILE]\n"
    "  prints 'A PATH', 'C PATH', 'D PATH' for what the sandbox added, changed and\n"
    "  deleted against its template or image; --json: types, sizes, modes, owners,\n"
    "  SHA-256 of files; --tar FILE: the added and changed files as a tar ('-': stdout);\n"
    "  --disk: a qcow2 file not in use by a running guest (a snapshot's disk0.qcow2)\n"
    "  against the file below it in its chain, or against --base\n";

static int print_diff(const struct fsdiff *d, bool json)
{
	char *text = json ? fsdiff_json(d) : fsdiff_text(d);
	if (!text) {
		fprintf(stderr, "cove diff: out of memory\n");
		return 1;
	}
	fputs(text, stdout);
	if (json)
		fputc('\n', stdout);
	free(text);
	return fflush(stdout) ? 1 : 0;
}

static int diff_named(const char *name, int fd, struct cove_diff **d, char *err, size_t errlen)
{
	struct cove_sandbox *sb;
	int r = cove_open(name, &sb, err, errlen);
	if (r < 0)
		return r;
	r = cove_diff(sb, fd, d, err, errlen);
	cove_free(sb);
	return r;
}

static int diff_disk(const char *disk, const char *base, int fd, struct cove_diff **d, char *err,
                     size_t errlen)
{
	char real[PATH_MAX];
	if (base && !realpath(base, real)) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", base, strerror(e));
		return -e;
	}
	struct cove_diff_src src = { .top = disk, .base = base ? real : NULL, .tar_fd = fd };
	return cove_diff_disk(&src, d, err, errlen);
}

int cli_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },       { "tar", required_argument, NULL, 't' },
		{ "disk", required_argument, NULL, 'd' }, { "base", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },       { 0 },
	};
	const char *prog = "cove diff", *tar = NULL, *disk = NULL, *base = NULL;
	bool json = false;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o == 'j') {
			json = true;
		} else if (o == 't') {
			tar = optarg;
		} else if (o == 'd') {
			disk = optarg;
		} else if (o == 'b') {
			base = optarg;
		} else if (o == 'h') {
			fputs(diff_usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n%s", prog, argv[optind - 1],
			        diff_usage);
			return 2;
		}
	}
	if (argc - optind != (disk ? 0 : 1) || (base && !disk)) {
		fprintf(stderr, "%s: needs NAME, or --disk (--base only with it)\n%s", prog,
		        diff_usage);
		return 2;
	}
	const char *name = disk ? NULL : argv[optind];
	if (name && cli_check_name(name, prog) < 0)
		return 2;
	bool tar_out = tar && !strcmp(tar, "-");
	int fd = -1;
	if (tar && !tar_out &&
	    (fd = open(tar, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, tar, strerror(errno));
		return 1;
	}
	if (tar_out)
		fd = STDOUT_FILENO;
	char err[512];
	struct cove_diff *d = NULL;
	int r = name ? diff_named(name, fd, &d, err, sizeof(err))
	             : diff_disk(disk, base, fd, &d, err, sizeof(err));
	if (fd > STDOUT_FILENO && close(fd) < 0 && !r) {
		r = -errno;
		snprintf(err, sizeof(err), "%s: %s", tar, strerror(errno));
	}
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		cove_diff_free(d);
		return 1;
	}
	/* With the tar on stdout, the tar is all that is printed. */
	int status = tar_out ? 0 : print_diff(cove_diff_result(d), json);
	cove_diff_free(d);
	return status;
}
