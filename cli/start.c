/* cove start and cove stop: named sandboxes that outlive the command line.
 * start boots one detached (cove-vmm in its own session, its output in the
 * sandbox's directory), waits for its agent and prints its name; stop asks
 * its guest to shut down and removes its entry. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/net.h"
#include "cli/options.h"
#include "cli/start.h"
#include "cove.h"
#include "lib/base/text.h"

static const char start_usage[] =
    "usage: cove start --name NAME [--cpus N] [--memory MiB]\n"
    "                  [--image minimal|debian|PATH] [--kernel PATH]\n"
    "                  [--hostname NAME] [--timeout S] [LIMITS]\n" CLI_LIMIT_USAGE CLI_NET_USAGE
    "  --timeout S: give up when the agent has not answered after S seconds (60)\n";

static const char stop_usage[] = "usage: cove stop NAME...\n";

int cli_start(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, CLI_O_NAME },
		{ "cpus", required_argument, NULL, CLI_O_CPUS },
		{ "memory", required_argument, NULL, CLI_O_MEMORY },
		{ "image", required_argument, NULL, CLI_O_IMAGE },
		{ "kernel", required_argument, NULL, CLI_O_KERNEL },
		{ "hostname", required_argument, NULL, CLI_O_HOSTNAME },
		{ "timeout", required_argument, NULL, CLI_O_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		CLI_LIMIT_OPTIONS,
		CLI_NET_OPTIONS,
		{ 0 },
	};
	const char *prog = "cove start";
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	static struct cli_net net;
	char *image = NULL, hostname[COVE_NAME_MAX + 1];
	unsigned long v;
	int o, status = 2;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int k = cli_config_option(&cfg, &image, o, optarg, prog);
		if (k == 0)
			k = cli_net_option(&net, o, optarg, prog, false);
		if (k < 0)
			goto out;
		if (k > 0)
			continue;
		switch (o) {
		case CLI_O_NAME:
			if (cli_check_name(optarg, prog) < 0)
				goto out;
			cfg.name = optarg;
			break;
		case CLI_O_TIMEOUT:
			if (cli_parse_num(optarg, 86400, &v) < 0 || v == 0) {
				fprintf(stderr,
				        "%s: --timeout must be 1 to 86400 seconds, got '%s'\n",
				        prog, optarg);
				goto out;
			}
			cfg.boot_timeout_ms = (unsigned int)(v * 1000);
			break;
		case 'h':
			fputs(start_usage, stdout);
			status = 0;
			goto out;
		default:
			fprintf(stderr, "%s: unknown or incomplete option '%s'\n%s", prog,
			        argv[optind - 1], start_usage);
			goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n%s", prog, argv[optind],
		        start_usage);
		goto out;
	}
	if (!cfg.name) {
		fprintf(stderr, "%s: --name NAME is required\n%s", prog, start_usage);
		goto out;
	}
	if (!cfg.hostname) {
		cli_hostname_from_name(cfg.name, hostname);
		if (text_hostname_valid(hostname)) /* else the default, "cove" */
			cfg.hostname = hostname;
	}
	cfg.detached = true;
	char err[512];
	struct cove_sandbox *sb;
	cli_net_apply(&net, &cfg);
	if (cove_start(&cfg, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		status = 1;
		goto out;
	}
	printf("%s\n", cove_sandbox_name(sb));
	cove_free(sb); /* detached: it keeps running */
	status = 0;
out:
	free(image);
	return status;
}

int cli_stop(int argc, char **argv)
{
	const char *prog = "cove stop";
	if (argc < 2) {
		fprintf(stderr, "%s: no sandbox named\n%s", prog, stop_usage);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(stop_usage, stdout);
		return 0;
	}
	int status = 0;
	for (int i = 1; i < argc; i++) {
		if (cli_check_name(argv[i], prog) < 0) {
			status = 1;
			continue;
		}
		char err[512];
		struct cove_sandbox *sb;
		int r = cove_open(argv[i], &sb, err, sizeof(err));
		if (r == -ESRCH) {
			/* It is not running any more, which is what was asked. */
			fprintf(stderr, "%s: %s\n", prog, err);
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "%s: %s\n", prog, err);
			status = 1;
			continue;
		}
		cove_stop(sb);
		cove_free(sb);
	}
	return status;
}
