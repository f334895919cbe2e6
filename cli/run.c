/* cove run: boot a sandbox, copy files in, run one command with its
 * output streamed, copy files out, tear the sandbox down.  Exits with the
 * command's status (128+N when a signal N killed it, 124 on --timeout). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cove.h"

static const char run_usage[] =
    "usage: cove run [--cpus N] [--memory MiB] [--image minimal|debian|PATH]\n"
    "                [--kernel PATH] [--hostname NAME] [-e K=V]... [-w DIR]\n"
    "                [--timeout S] [--put LOCAL:GUEST]... [--get GUEST:LOCAL]...\n"
    "                [LIMITS] [-it] -- CMD [ARGS...]\n" CLI_LIMIT_USAGE CLI_NET_USAGE;

/* "A:B" -> A and B (split at the first ':'). */
static int split_pair(char *s, char **a, char **b)
{
	char *c = strchr(s, ':');
	if (!c || c == s || !c[1])
		return -1;
	*c = 0;
	*a = s;
	*b = c + 1;
	return 0;
}

int cli_run(int argc, char **argv)
{
	enum { O_PUT = CLI_O_FIRST_FREE, O_GET };
	static const struct option opts[] = {
		{ "cpus", required_argument, NULL, CLI_O_CPUS },
		{ "memory", required_argument, NULL, CLI_O_MEMORY },
		{ "image", required_argument, NULL, CLI_O_IMAGE },
		{ "kernel", required_argument, NULL, CLI_O_KERNEL },
		{ "hostname", required_argument, NULL, CLI_O_HOSTNAME },
		{ "timeout", required_argument, NULL, CLI_O_TIMEOUT },
		{ "env", required_argument, NULL, 'e' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "tty", no_argument, NULL, 't' },
		{ "put", required_argument, NULL, O_PUT },
		{ "get", required_argument, NULL, O_GET },
		{ "help", no_argument, NULL, 'h' },
		CLI_LIMIT_OPTIONS,
		CLI_NET_OPTIONS,
		{ 0 },
	};
	const char *prog = "cove run";
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	static struct cli_net net;
	struct cli_exec x = { .nenv = 0 };
	struct {
		char *from, *to;
	} puts_[CLI_MAX_LIST], gets_[CLI_MAX_LIST];
	int nput = 0, nget = 0, status = 2;
	char *image = NULL;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "+" CLI_EXEC_SHORT "h", opts, NULL)) != -1) {
		int k = cli_config_option(&cfg, &image, o, optarg, prog);
		if (k == 0)
			k = cli_net_option(&net, o, optarg, prog, false);
		if (k == 0)
			k = cli_exec_option(&x, o, optarg, prog);
		if (k < 0)
			goto out;
		if (k > 0)
			continue;
		switch (o) {
		case O_PUT:
		case O_GET: {
			int *n = o == O_PUT ? &nput : &nget;
			char *a, *b;
			if (*n == CLI_MAX_LIST || split_pair(optarg, &a, &b) < 0) {
				fprintf(stderr, "%s: --%s needs %s, got '%s'\n", prog,
				        o == O_PUT ? "put" : "get",
				        o == O_PUT ? "LOCAL:GUEST" : "GUEST:LOCAL", optarg);
				goto out;
			}
			if (o == O_PUT) {
				puts_[nput].from = a;
				puts_[nput++].to = b;
			} else {
				gets_[nget].from = a;
				gets_[nget++].to = b;
			}
			break;
		}
		case 'h':
			fputs(run_usage, stdout);
			status = 0;
			goto out;
		default:
			fprintf(stderr, "%s: unknown or incomplete option '%s'\n%s", prog,
			        argv[optind - 1], run_usage);
			goto out;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no command given\n%s", prog, run_usage);
		goto out;
	}
	if (cli_exec_check(&x, prog) < 0)
		goto out;

	char err[512];
	struct cove_sandbox *sb = NULL;
	cli_net_apply(&net, &cfg);
	if (cove_start(&cfg, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		status = 125;
		goto out;
	}
	status = 125;
	for (int i = 0; i < nput; i++) {
		if (cove_put_file(sb, puts_[i].from, puts_[i].to, 0, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: --put %s:%s: %s\n", prog, puts_[i].from, puts_[i].to,
			        err);
			goto stop;
		}
	}
	bool ran;
	status = cli_exec_command(sb, &x, argv + optind, prog, &ran);
	for (int i = 0; i < nget && ran; i++) {
		if (cove_get_file(sb, gets_[i].from, gets_[i].to, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: --get %s:%s: %s\n", prog, gets_[i].from, gets_[i].to,
			        err);
			if (status == 0)
				status = 125;
		}
	}
stop:
	cove_free(sb);
out:
	free(image);
	return status;
}
