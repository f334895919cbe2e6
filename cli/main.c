/* cove: the command line.  Subcommands live in their own files. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: cove <command> [options]\n"
    "\n"
    "commands:\n"
    "  run [options] -- CMD [ARGS...]   boot a sandbox, run CMD in it, tear it down\n"
    "\n"
    "run 'cove run --help' for the options.\n";

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "run"))
		return cli_run(argc - 1, argv + 1);
	fprintf(stderr, "cove: unknown command '%s' (try 'cove --help')\n", argv[1]);
	return 2;
}
