/* cove snapshot, cove restore, cove fork: a running sandbox saved to a
 * directory through cove-vmm's control socket, and sandboxes started from
 * one (fork: several at once, all or none). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/net.h"
#include "cli/options.h"
#include "cli/snapshot.h"
#include "cove.h"
#include "errf.h"

#define FORK_MAX 256

static const char snapshot_usage[] = "usage: cove snapshot NAME DIR [--stop]\n"
                                     "  --stop: the sandbox ends with the snapshot\n";
static const char restore_usage[] =
    "usage: cove restore DIR --name NAME [--hostname NAME] [--timeout S] [NETWORK]\n"
    "  a snapshot with a network gets a fresh one with its policy, unless\n"
    "  --net, --allow or --deny give another\n" CLI_NET_USAGE;
static const char fork_usage[] =
    "usage: cove fork DIR --count N --prefix P [--timeout S] [NETWORK]\n"
    "  starts P-1 ... P-N from the snapshot DIR at once; all of them or none;\n"
    "  each gets its own network with a copy of the policy (or NETWORK's)\n" CLI_NET_USAGE;

int cli_snapshot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "stop", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *prog = "cove snapshot";
	bool stop = false;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o == 's') {
			stop = true;
		} else if (o == 'h') {
			fputs(snapshot_usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n%s", prog, argv[optind - 1],
			        snapshot_usage);
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "%s: needs NAME and DIR\n%s", prog, snapshot_usage);
		return 2;
	}
	const char *name = argv[optind], *dir = argv[optind + 1];
	if (cli_check_name(name, prog) < 0)
		return 2;
	char err[512];
	struct cove_sandbox *sb;
	if (cove_open(name, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	/* Forks start from it: their guests need not each write the same
	 * dirty blocks back.  Without the sync the snapshot is still right. */
	if (cove_snapshot_sync(sb, SNAPSHOT_SYNC_MS, err, sizeof(err)) < 0)
		fprintf(stderr, "%s: note: %s; snapshotting without it\n", prog, err);
	int r = cove_snapshot(sb, dir, stop, err, sizeof(err));
	cove_free(sb);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	printf("%s\n", dir);
	return 0;
}

struct restore_args {
	const char *dir, *name, *prefix;
	unsigned long count;
	struct cli_net net;
};

/* Options of restore and fork.  Returns -1 when the command goes on (cfg
 * and a filled in), else the exit status (help shown, or bad usage). */
static int parse_restore(int argc, char **argv, bool fork_, struct cove_config *cfg,
                         struct restore_args *a)
{
	enum { O_COUNT = CLI_O_FIRST_FREE, O_PREFIX };
	static const struct option opts[] = {
		{ "name", required_argument, NULL, CLI_O_NAME },
		{ "hostname", required_argument, NULL, CLI_O_HOSTNAME },
		{ "timeout", required_argument, NULL, CLI_O_TIMEOUT },
		{ "count", required_argument, NULL, O_COUNT },
		{ "prefix", required_argument, NULL, O_PREFIX },
		{ "help", no_argument, NULL, 'h' },
		CLI_NET_OPTIONS,
		{ 0 },
	};
	const char *prog = fork_ ? "cove fork" : "cove restore";
	const char *usage = fork_ ? fork_usage : restore_usage;
	unsigned long v;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int k = cli_net_option(&a->net, o, optarg, prog, false);
		if (k < 0)
			return 2;
		if (k > 0)
			continue;
		switch (o) {
		case CLI_O_NAME:
		case CLI_O_HOSTNAME:
			if (fork_)
				goto unknown;
			if (o == CLI_O_NAME && cli_check_name(optarg, prog) < 0)
				return 2;
			if (o == CLI_O_NAME)
				a->name = optarg;
			else
				cfg->hostname = optarg;
			break;
		case CLI_O_TIMEOUT:
			if (cli_parse_num(optarg, 86400, &v) < 0 || v == 0) {
				fprintf(stderr,
				        "%s: --timeout must be 1 to 86400 seconds, got '%s'\n",
				        prog, optarg);
				return 2;
			}
			cfg->boot_timeout_ms = (unsigned int)(v * 1000);
			break;
		case O_COUNT:
			if (!fork_)
				goto unknown;
			if (cli_parse_num(optarg, FORK_MAX, &v) < 0 || v == 0) {
				fprintf(stderr, "%s: --count must be 1 to %d, got '%s'\n", prog,
				        FORK_MAX, optarg);
				return 2;
			}
			a->count = v;
			break;
		case O_PREFIX:
			if (!fork_)
				goto unknown;
			a->prefix = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
		unknown:
			fprintf(stderr, "%s: unknown or incomplete option '%s'\n%s", prog,
			        argv[optind - 1], usage);
			return 2;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "%s: needs one snapshot directory\n%s", prog, usage);
		return 2;
	}
	a->dir = argv[optind];
	if (!fork_ && !a->name) {
		fprintf(stderr, "%s: --name NAME is required\n%s", prog, usage);
		return 2;
	}
	if (fork_ && (!a->count || !a->prefix)) {
		fprintf(stderr, "%s: --count N and --prefix P are required\n%s", prog, usage);
		return 2;
	}
	/* A fork's publish ports would collide; a restore may give its own. */
	if (fork_ && a->net.npublish) {
		fprintf(stderr, "%s: --publish binds one host port: it cannot go to %lu forks\n",
		        prog, a->count);
		return 2;
	}
	cfg->detached = true;
	/* Restored sandboxes keep the snapshot's policy unless one is given;
	 * --dns, --publish and --net-limit alone do not replace it. */
	bool policy = a->net.mode_set || a->net.nallow || a->net.ndeny;
	cli_net_apply(&a->net, cfg);
	if (!policy)
		cfg->net.mode = COVE_NET_OFF;
	return -1;
}

int cli_restore(int argc, char **argv)
{
	const char *prog = "cove restore";
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	static struct restore_args a;
	int status = parse_restore(argc, argv, false, &cfg, &a);
	if (status >= 0)
		return status;
	char err[512], hostname[COVE_NAME_MAX + 1];
	if (!cfg.hostname) {
		cli_hostname_from_name(a.name, hostname);
		cfg.hostname = hostname;
	}
	cfg.name = a.name;
	struct cove_sandbox *sb;
	if (cove_restore(&cfg, a.dir, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	printf("%s\n", cove_sandbox_name(sb));
	cove_free(sb);
	return 0;
}

struct fork_job {
	struct cove_config cfg;
	const char *dir;
	char name[COVE_NAME_MAX + 1], hostname[COVE_NAME_MAX + 1];
	struct cove_sandbox *sb;
	char err[512];
	int r;
};

static void *fork_one(void *arg)
{
	struct fork_job *j = arg;
	j->r = cove_restore(&j->cfg, j->dir, &j->sb, j->err, sizeof(j->err));
	return NULL;
}

int cli_fork(int argc, char **argv)
{
	const char *prog = "cove fork";
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	static struct restore_args a;
	int status = parse_restore(argc, argv, true, &cfg, &a);
	if (status >= 0)
		return status;
	/* The longest name decides whether the prefix fits. */
	char last[64];
	snprintf(last, sizeof(last), "%.40s-%lu", a.prefix, a.count);
	if (strlen(a.prefix) > 40 || !cove_name_valid(last)) {
		fprintf(stderr, "%s: prefix '%s' does not make valid names up to '%s'\n", prog,
		        a.prefix, last);
		return 2;
	}
	struct fork_job *jobs = calloc(a.count, sizeof(*jobs));
	pthread_t *threads = calloc(a.count, sizeof(*threads));
	bool *started = calloc(a.count, sizeof(*started));
	if (!jobs || !threads || !started) {
		fprintf(stderr, "%s: out of memory\n", prog);
		free(jobs);
		free(threads);
		free(started);
		return 1;
	}
	for (unsigned long i = 0; i < a.count; i++) {
		struct fork_job *j = &jobs[i];
		j->cfg = cfg;
		j->dir = a.dir;
		snprintf(j->name, sizeof(j->name), "%s-%lu", a.prefix, i + 1);
		cli_hostname_from_name(j->name, j->hostname);
		j->cfg.name = j->name;
		j->cfg.hostname = j->hostname;
		int e = pthread_create(&threads[i], NULL, fork_one, j);
		if (e)
			j->r = errf(j->err, sizeof(j->err), -e, "cannot start a thread: %s",
			            strerror(e));
		started[i] = e == 0;
	}
	int failed = 0;
	for (unsigned long i = 0; i < a.count; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		if (jobs[i].r < 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, jobs[i].name, jobs[i].err);
			failed++;
		}
	}
	for (unsigned long i = 0; i < a.count; i++) {
		if (!jobs[i].sb)
			continue;
		if (failed)
			cove_stop(jobs[i].sb); /* all or none */
		else
			printf("%s\n", jobs[i].name);
		cove_free(jobs[i].sb);
	}
	if (failed)
		fprintf(stderr, "%s: %d of %lu did not come up; stopped the others\n", prog, failed,
		        a.count);
	free(jobs);
	free(threads);
	free(started);
	return failed ? 1 : 0;
}
