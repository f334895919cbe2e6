/* cove exec NAME: one command in a running named sandbox, as cove run
 * runs it (same options for the command, same exit statuses). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/exec.h"
#include "cli/exec_io.h"
#include "cli/options.h"
#include "cove.h"

static const char exec_usage[] =
    "usage: cove exec NAME [-it] [-e K=V]... [-w DIR] [-u USER[:GROUP]] [--timeout S]\n"
    "                 -- CMD [ARGS...]\n";

int cli_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "timeout", required_argument, NULL, CLI_O_TIMEOUT },
		{ "env", required_argument, NULL, 'e' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "user", required_argument, NULL, 'u' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "tty", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *prog = "cove exec";
	struct cli_exec x = { .nenv = 0 };
	const char *name = NULL;
	int o;
	opterr = 0;
	/* NAME may come before or after the options; CMD starts at the first
	 * word after NAME that is not an option, or after "--". */
	for (;;) {
		o = getopt_long(argc, argv, "+" CLI_EXEC_SHORT "h", opts, NULL);
		if (o == -1) {
			bool dashdash = optind > 1 && !strcmp(argv[optind - 1], "--");
			if (!name && !dashdash && optind < argc) {
				name = argv[optind++];
				continue;
			}
			break;
		}
		int k = cli_exec_option(&x, o, optarg, prog);
		if (k < 0)
			return 2;
		if (k > 0)
			continue;
		if (o == 'h') {
			fputs(exec_usage, stdout);
			return 0;
		}
		fprintf(stderr, "%s: unknown or incomplete option '%s'\n%s", prog, argv[optind - 1],
		        exec_usage);
		return 2;
	}
	if (!name) {
		fprintf(stderr, "%s: no sandbox named\n%s", prog, exec_usage);
		return 2;
	}
	if (cli_check_name(name, prog) < 0)
		return 2;
	if (optind >= argc) {
		fprintf(stderr, "%s: no command given\n%s", prog, exec_usage);
		return 2;
	}
	if (cli_exec_check(&x, prog) < 0)
		return 2;
	char err[512];
	struct cove_sandbox *sb;
	if (cove_open(name, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 125;
	}
	int status = cli_exec_command(sb, &x, argv + optind, prog, NULL);
	cove_free(sb);
	return status;
}
