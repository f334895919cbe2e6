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
#include "lib/template/template_prune.h"

static const char template_usage[] =
    "usage: cove template build NAME [--image minimal|debian|PATH | --from IMAGE]\n"
    "                           [--kernel PATH] [--cpus N] [--memory MiB]\n"
    "                           [--disk-size SIZE] [--net none|open]\n"
    "                           [--run CMD]... [--put LOCAL:GUEST]...\n"
    "                           [--start CMD [--ready CMD | --ready-port N]\n"
    "                            [--ready-timeout S]] [--step-timeout S] [--force]\n"
    "       cove template build NAME -f DOCKERFILE [CONTEXT] [--build-arg K=V]...\n"
    "                           (and the options above but --image, --from)\n"
    "       cove template ls [--json]\n"
    "       cove template inspect NAME\n"
    "       cove template rm NAME...\n"
    "       cove template prune [--dry-run]   the step and image caches no template uses\n"
    "  IMAGE: oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE, or a\n"
    "  registry reference (pulled with skopeo).  Steps run in the order given,\n"
    "  CMD through /bin/sh -c; each one's result is cached, and a template whose\n"
    "  inputs are unchanged is not built again (--force runs every step again).\n"
    "  A RUN still going after --step-timeout (default 1800 s) is killed.\n"
    "  The store is $COVE_TEMPLATE_DIR, else $XDG_CACHE_HOME/cove/templates,\n"
    "  else ~/.cache/cove/templates.\n";

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
	enum {
		O_RUN = CLI_O_FIRST_FREE,
		O_PUT,
		O_FORCE,
		O_FROM,
		O_BUILD_ARG,
		O_START,
		O_READY,
		O_READY_PORT,
		O_READY_TIMEOUT,
		O_STEP_TIMEOUT,
	};
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
		{ "from", required_argument, NULL, O_FROM },
		{ "file", required_argument, NULL, 'f' },
		{ "build-arg", required_argument, NULL, O_BUILD_ARG },
		{ "start", required_argument, NULL, O_START },
		{ "ready", required_argument, NULL, O_READY },
		{ "ready-port", required_argument, NULL, O_READY_PORT },
		{ "ready-timeout", required_argument, NULL, O_READY_TIMEOUT },
		{ "step-timeout", required_argument, NULL, O_STEP_TIMEOUT },
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
	const char *from = NULL, *dockerfile = NULL, *start = NULL, *ready = NULL;
	const char *build_args[COVE_TEMPLATE_STEPS_MAX];
	size_t nargs = 0;
	unsigned long port = 0, ready_s = 0, step_s = 0;
	struct cove_template_spec spec = { 0 };
	opterr = 0;
	/* NAME may come before the options (permuted). */
	while ((o = getopt_long(argc, argv, "hf:", opts, NULL)) != -1) {
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
		case O_FROM:
			from = optarg;
			break;
		case 'f':
			dockerfile = optarg;
			break;
		case O_BUILD_ARG:
			if (nargs == COVE_TEMPLATE_STEPS_MAX || !strchr(optarg, '=')) {
				fprintf(stderr, "%s: --build-arg needs NAME=value (at most %d)\n",
				        prog, COVE_TEMPLATE_STEPS_MAX);
				goto out;
			}
			build_args[nargs++] = optarg;
			break;
		case O_START:
			start = optarg;
			break;
		case O_READY:
			ready = optarg;
			break;
		case O_READY_PORT:
		case O_READY_TIMEOUT:
		case O_STEP_TIMEOUT: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			unsigned long max = o == O_READY_PORT     ? 65535
			                    : o == O_STEP_TIMEOUT ? 7 * 86400
			                                          : COVE_TEMPLATE_READY_MAX;
			const char *what = o == O_READY_PORT     ? "ready-port"
			                   : o == O_STEP_TIMEOUT ? "step-timeout"
			                                         : "ready-timeout";
			if (*end || !v || v > max || optarg[0] == '-') {
				fprintf(stderr, "%s: --%s must be 1 to %lu, got '%s'\n", prog, what,
				        max, optarg);
				goto out;
			}
			*(o == O_READY_PORT ? &port : o == O_STEP_TIMEOUT ? &step_s : &ready_s) = v;
			break;
		}
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
	if (argc - optind != 1 && !(dockerfile && argc - optind == 2)) {
		fprintf(stderr, "%s: needs one NAME%s\n%s", prog,
		        dockerfile ? " and at most one CONTEXT" : "", template_usage);
		goto out;
	}
	const char *name = argv[optind], *context = dockerfile ? argv[optind + 1] : NULL;
	if ((from || dockerfile) && image) {
		fprintf(stderr, "%s: --image does not go with --from or -f\n", prog);
		goto out;
	}
	if (from && dockerfile) {
		fprintf(stderr, "%s: --from and -f: the Dockerfile's FROM says where to start\n",
		        prog);
		goto out;
	}
	if ((ready || port || ready_s) && !start) {
		fprintf(stderr, "%s: --ready, --ready-port and --ready-timeout need --start\n",
		        prog);
		goto out;
	}
	if (ready && port) {
		fprintf(stderr, "%s: --ready or --ready-port, not both\n", prog);
		goto out;
	}
	if (!strncmp(name, "base-", 5)) {
		fprintf(stderr, "%s: names starting with 'base-' are cove run's own\n", prog);
		goto out;
	}
	if (cove_template_spec_init(&spec, name, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	spec.net = net;
	if ((from && (cove_template_set(&spec, &spec.from, from, err, sizeof(err)) < 0 ||
	              cove_template_set_agent(&spec, err, sizeof(err)) < 0)) ||
	    (dockerfile && cove_template_from_dockerfile(&spec, dockerfile, context, build_args,
	                                                 nargs, err, sizeof(err)) < 0) ||
	    (start && cove_template_set(&spec, &spec.start_cmd, start, err, sizeof(err)) < 0) ||
	    (ready && cove_template_set(&spec, &spec.ready_cmd, ready, err, sizeof(err)) < 0)) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	spec.ready_port = (unsigned int)port;
	spec.ready_timeout_s = (unsigned int)ready_s;
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
	io.step_timeout_s = (unsigned int)step_s;
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

static int template_inspect(int argc, char **argv)
{
	const char *prog = "cove template inspect";
	if (argc != 2) {
		fprintf(stderr, "%s: needs one NAME\n%s", prog, template_usage);
		return 2;
	}
	struct cove_template_manifest m;
	char err[600];
	if (cove_template_load(argv[1], &m, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	char *text = template_manifest_dump(&m);
	cove_template_manifest_free(&m);
	if (!text) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	puts(text);
	free(text);
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

static int template_prune(int argc, char **argv)
{
	const char *prog = "cove template prune";
	bool dry = argc == 2 && !strcmp(argv[1], "--dry-run");
	if (argc > 2 || (argc == 2 && !dry)) {
		fprintf(stderr, "%s: takes only --dry-run\n%s", prog, template_usage);
		return 2;
	}
	struct cove_template_pruned p;
	char err[600];
	if (cove_template_prune(dry, &p, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	printf("%s %u step snapshots and %u root file systems, %.1f MiB\n",
	       dry ? "would remove" : "removed", p.steps, p.rootfs, (double)p.bytes / (1 << 20));
	return 0;
}

int cli_template(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "build"))
		return template_build(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "ls"))
		return template_ls(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "inspect"))
		return template_inspect(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "rm"))
		return template_rm(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "prune"))
		return template_prune(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(template_usage, stdout);
		return 0;
	}
	fprintf(stderr, "cove template: needs build, ls, inspect or rm\n%s", template_usage);
	return 2;
}
