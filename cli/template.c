/* cove template build|ls|rm: the template store (lib/template.h).  A build
 * boots a sandbox, runs the --run and --put steps in order with their
 * output streamed, and snapshots it; a failing step ends the build with
 * that step's status and leaves no template behind. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/exec_io.h"
#include "cli/options.h"
#include "cli/template.h"
#include "cove.h"
#include "io.h"
#include "lib/base/text.h"
#include "lib/template/template.h"

static const char template_usage[] =
    "usage: cove template build NAME [--image minimal|debian|PATH] [--kernel PATH]\n"
    "                           [--cpus N] [--memory MiB] [--disk-size SIZE]\n"
    "                           [--net none|open] [--run CMD]... [--put LOCAL:GUEST]...\n"
    "       cove template ls [--json]\n"
    "       cove template rm NAME...\n"
    "  steps run in the order given, CMD through /bin/sh -c; a template whose\n"
    "  inputs (kernel, image, cove-vmm, sizes, steps, --put files' contents) are\n"
    "  unchanged is not built again (--force builds it anyway).  The store is\n"
    "  $COVE_TEMPLATE_DIR, else $XDG_CACHE_HOME/cove/templates, else\n"
    "  ~/.cache/cove/templates.\n";

/* A step's output to our stdout or stderr, filtered as cove run's. */
static struct cli_stream outs[2];

static void on_out(void *opaque, const void *data, size_t len)
{
	(void)opaque;
	cli_stream_write(&outs[0], data, len);
}

static void on_err(void *opaque, const void *data, size_t len)
{
	(void)opaque;
	cli_stream_write(&outs[1], data, len);
}

static void on_note(void *opaque, const char *line)
{
	fprintf(stderr, "%s: %s\n", (const char *)opaque, line);
}

void cli_template_io(struct cove_template_io *io, const char *prog, bool steps_output)
{
	for (int i = 0; i < 2; i++) {
		cli_stream_init(&outs[i], i ? STDERR_FILENO : STDOUT_FILENO);
	}
	*io = (struct cove_template_io){
		.note = on_note,
		.on_stdout = steps_output ? on_out : NULL,
		.on_stderr = steps_output ? on_err : NULL,
		.opaque = (void *)prog,
	};
}

static int template_build(int argc, char **argv)
{
	enum { O_RUN = CLI_O_FIRST_FREE, O_PUT, O_FORCE };
	static const struct option opts[] = {
		{ "cpus", required_argument, NULL, CLI_O_CPUS },
		{ "memory", required_argument, NULL, CLI_O_MEMORY },
		{ "image", required_argument, NULL, CLI_O_IMAGE },
		{ "kernel", required_argument, NULL, CLI_O_KERNEL },
		{ "disk-size", required_argument, NULL, CLI_O_DISK_SIZE },
		{ "net", required_argument, NULL, CLI_O_NET },
		{ "run", required_argument, NULL, O_RUN },
		{ "put", required_argument, NULL, O_PUT },
		{ "force", no_argument, NULL, O_FORCE },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *prog = "cove template build";
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	/* Steps keep their order: collected first, added once the name and
	 * configuration are known. */
	struct {
		int kind;
		char *arg;
	} steps[COVE_TEMPLATE_STEPS_MAX];
	int nsteps = 0, status = 2, o;
	bool force = false;
	int net = COVE_TEMPLATE_NET_OFF;
	char *image = NULL, err[600];
	struct cove_template_spec spec = { 0 };
	opterr = 0;
	/* NAME may come before the options (permuted). */
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int k = o == CLI_O_NET ? 0 : cli_config_option(&cfg, &image, o, optarg, prog);
		if (k < 0)
			goto out;
		if (k > 0)
			continue;
		switch (o) {
		case CLI_O_NET:
			if (strcmp(optarg, "none") && strcmp(optarg, "open")) {
				fprintf(stderr, "%s: --net must be none or open, got '%s'\n", prog,
				        optarg);
				goto out;
			}
			/* The build's sandbox gets a NIC (policy none); "open"
			 * lets the steps reach the world. */
			net = strcmp(optarg, "open") ? COVE_TEMPLATE_NET_NONE
			                             : COVE_TEMPLATE_NET_OPEN;
			break;
		case O_RUN:
		case O_PUT:
			if (nsteps == COVE_TEMPLATE_STEPS_MAX) {
				fprintf(stderr, "%s: at most %d steps\n", prog,
				        COVE_TEMPLATE_STEPS_MAX);
				goto out;
			}
			steps[nsteps].kind = o;
			steps[nsteps++].arg = optarg;
			break;
		case O_FORCE:
			force = true;
			break;
		case 'h':
			fputs(template_usage, stdout);
			status = 0;
			goto out;
		default:
			fprintf(stderr, "%s: unknown or incomplete option '%s'\n%s", prog,
			        argv[optind - 1], template_usage);
			goto out;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "%s: needs one NAME\n%s", prog, template_usage);
		goto out;
	}
	const char *name = argv[optind];
	if (!strncmp(name, "base-", 5)) {
		fprintf(stderr, "%s: names starting with 'base-' are cove run's own\n", prog);
		goto out;
	}
	if (cove_template_spec_init(&spec, name, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	spec.net = net;
	for (int i = 0; i < nsteps; i++) {
		int r;
		if (steps[i].kind == O_RUN) {
			r = cove_template_add_run(&spec, steps[i].arg, err, sizeof(err));
		} else {
			char *c = strchr(steps[i].arg, ':');
			if (!c || c == steps[i].arg || !c[1]) {
				fprintf(stderr, "%s: --put needs LOCAL:GUEST, got '%s'\n", prog,
				        steps[i].arg);
				goto out;
			}
			*c = 0;
			r = cove_template_add_put(&spec, steps[i].arg, c + 1, err, sizeof(err));
		}
		if (r < 0) {
			fprintf(stderr, "%s: %s\n", prog, err);
			goto out;
		}
	}
	struct cove_template_io io;
	cli_template_io(&io, prog, true);
	char dir[4200];
	int lockfd;
	int r =
	    cove_template_ensure(&spec, force, &io, dir, sizeof(dir), &lockfd, err, sizeof(err));
	if (r != 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		status = r > 0 ? r : 1;
		goto out;
	}
	close(lockfd);
	printf("%s\n", dir);
	status = 0;
out:
	cove_template_spec_free(&spec);
	free(image);
	return status;
}

static int template_ls(int argc, char **argv)
{
	const char *prog = "cove template ls";
	bool json = argc == 2 && !strcmp(argv[1], "--json");
	if (argc > 2 || (argc == 2 && !json)) {
		fprintf(stderr, "%s: takes only --json\n%s", prog, template_usage);
		return 2;
	}
	struct cove_template_info *v;
	size_t n;
	char err[600];
	if (cove_template_list(&v, &n, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	if (json)
		fputs("[", stdout);
	else
		printf("%-40s %-16s %10s  %s\n", "NAME", "INPUTS", "SIZE", "CREATED");
	for (size_t i = 0; i < n; i++) {
		char when[32] = "-";
		time_t t = (time_t)v[i].created;
		struct tm tm;
		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		if (json)
			printf("%s{\"name\": \"%s\", \"inputs_hash\": \"%s\", \"bytes\": %llu, "
			       "\"created\": %lld}",
			       i ? ", " : "", v[i].name, v[i].inputs_hash,
			       (unsigned long long)v[i].bytes, (long long)v[i].created);
		else
			printf("%-40s %.16s %9.1fM  %s\n", v[i].name, v[i].inputs_hash,
			       (double)v[i].bytes / (1 << 20), when);
	}
	if (json)
		puts("]");
	free(v);
	return 0;
}

static int template_rm(int argc, char **argv)
{
	const char *prog = "cove template rm";
	if (argc < 2) {
		fprintf(stderr, "%s: needs a NAME\n%s", prog, template_usage);
		return 2;
	}
	int status = 0;
	char err[600];
	for (int i = 1; i < argc; i++) {
		if (cove_template_remove(argv[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: %s\n", prog, err);
			status = 1;
		}
	}
	return status;
}

int cli_template(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "build"))
		return template_build(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "ls"))
		return template_ls(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "rm"))
		return template_rm(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(template_usage, stdout);
		return 0;
	}
	fprintf(stderr, "cove template: needs build, ls or rm\n%s", template_usage);
	return 2;
}
