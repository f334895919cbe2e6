/* cove: the command line.  Subcommands live in their own files. */
#include <stdio.h>
#include <string.h>

#include "cli/bench.h"
#include "cli/cluster.h"
#include "cli/cp.h"
#include "cli/diff.h"
#include "cli/doctor.h"
#include "cli/exec.h"
#include "cli/ls.h"
#include "cli/net.h"
#include "cli/port.h"
#include "cli/run.h"
#include "cli/snapshot.h"
#include "cli/start.h"
#include "cli/stats.h"
#include "cli/template.h"
#include "cove.h"

static const char usage[] =
    "usage: cove <command> [options]\n"
    "\n"
    "commands:\n"
    "  doctor [--json]                    can sandboxes run here, and how? (start here)\n"
    "  run [options] -- CMD [ARGS...]     start a sandbox (from a template; --cold: boot\n"
    "                                     it), run CMD in it, tear it down\n"
    "  start --name NAME [options]        boot a named sandbox that keeps running\n"
    "  exec NAME [options] -- CMD...      run CMD in a named sandbox\n"
    "  cp NAME:PATH LOCAL | LOCAL NAME:PATH   copy a file out of or into one\n"
    "  stop NAME...                       shut named sandboxes down\n"
    "  ls [--json]                        list sandboxes (and clean up dead ones)\n"
    "  net NAME [--net none|open] [--allow RULE]... [--deny CIDR]... [--proxy-rules F]\n"
    "                                     replace a running sandbox's network policy\n"
    "  logs NAME [--egress|--journal [--verify|--otlp URL]]  console, egress or coved journal\n"
    "  stats NAME [--json]                its CPU, memory and disk, as the host sees them\n"
    "  port NAME GUESTPORT [--listen [ADDR:]PORT]   a local port relayed to one in it\n"
    "  diff NAME [--json] [--tar FILE]    what it added, changed and deleted (docker diff)\n"
    "  snapshot NAME DIR [--stop]         save a running sandbox to DIR\n"
    "  restore DIR --name NAME            start a sandbox from a snapshot\n"
    "  fork DIR --count N --prefix P      start P-1 ... P-N from a snapshot at once\n"
    "  template build|ls|rm               sandboxes set up once, snapshotted, restored\n"
    "  bench boot|restore|fork|exec [-n N] [--json FILE]   latency benchmarks\n"
    "  cluster status [--json] | drain NODE [--undo]   coved's cluster (over its socket)\n"
    "  help [COMMAND]                     this text, or a command's options\n"
    "\n"
    "Sandboxes are found by name in $COVE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/cove,\n"
    "else /run/cove (root) or /tmp/cove-<uid>.\n";

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "run", cli_run },           { "start", cli_start },
	{ "exec", cli_exec },         { "cp", cli_cp },
	{ "stop", cli_stop },         { "ls", cli_ls },
	{ "snapshot", cli_snapshot }, { "restore", cli_restore },
	{ "fork", cli_fork },         { "bench", cli_bench },
	{ "doctor", cli_doctor },     { "net", cli_net },
	{ "logs", cli_logs },         { "template", cli_template },
	{ "cluster", cli_cluster },   { "stats", cli_stats },
	{ "diff", cli_diff },         { "port", cli_port },
};

static int dispatch(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[0], commands[i].name))
			return commands[i].fn(argc, argv);
	fprintf(stderr, "cove: unknown command '%s' (try 'cove help')\n", argv[0]);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || (!strcmp(cmd, "help") && argc == 2)) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(cmd, "help")) {
		char *help_argv[] = { argv[2], "--help", NULL };
		return dispatch(2, help_argv);
	}
	return dispatch(argc - 1, argv + 1);
}
