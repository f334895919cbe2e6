/* The network options of run, start, restore and fork; cove net, which
 * replaces a running sandbox's policy; cove logs, which prints its egress
 * decisions (or its console).  The rules themselves are checked by
 * libcove before anything starts, so every command gives the same line. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/net.h"
#include "cli/options.h"
#include "cove.h"
#include "daemon/trace/tracer.h"
#include "lib/base/jchain.h"

static const char net_usage[] =
    "usage: cove net NAME [--net none|open] [--allow RULE]... [--deny CIDR]...\n"
    "                [--proxy-rules FILE.json]\n"
    "  replaces the running sandbox's policy, all at once: what is not given is\n"
    "  gone (--allow alone: rules mode; nothing: deny everything); --proxy-rules\n"
    "  alone replaces only the credential rules (the policy stays)\n"
    "  RULE: IP, CIDR, CIDR:PORT, CIDR:LO-HI, NAME, *.NAME, NAME:PORT\n";

static const char logs_usage[] =
    "usage: cove logs NAME [--egress | --journal [--verify | --otlp URL] [--state-dir DIR]]\n"
    "  the guest's console, or with --egress the egress decisions\n"
    "  (one JSON line each), or with --journal coved's record of the\n"
    "  sandbox (lifecycle, execs, files, egress; DIR: coved's state_dir,\n"
    "  default $COVED_STATE_DIR or /var/lib/coved); --verify checks the\n"
    "  journal's hash chain instead: exit 0 whole, 1 broken (the line named);\n"
    "  --otlp URL sends the journal as OpenTelemetry spans to an OTLP/HTTP\n"
    "  collector (docs/tracing.md)\n";

int cli_net_option(struct cli_net *n, int o, const char *arg, const char *prog, bool restrict_)
{
	const char **list = NULL;
	int *count = NULL, max = CLI_MAX_LIST;
	const char *flag = NULL;
	switch (o) {
	case CLI_O_NET:
		if (strcmp(arg, "none") && strcmp(arg, "open")) {
			fprintf(stderr, "%s: --net must be none or open, got '%s'\n", prog, arg);
			return -1;
		}
		n->any = n->mode_set = true;
		n->mode = strcmp(arg, "none") ? COVE_NET_OPEN : COVE_NET_NONE;
		return 1;
	case CLI_O_ALLOW:
		list = n->allow, count = &n->nallow, max = COVE_NET_RULES_MAX, flag = "--allow";
		break;
	case CLI_O_DENY:
		list = n->deny, count = &n->ndeny, max = COVE_NET_RULES_MAX, flag = "--deny";
		break;
	case CLI_O_PUBLISH:
		list = n->publish, count = &n->npublish, flag = "--publish";
		break;
	case CLI_O_DNS:
		list = n->dns, count = &n->ndns, flag = "--dns";
		break;
	case CLI_O_PROXY_RULES:
		n->any = true;
		n->proxy_rules = arg;
		return 1;
	case CLI_O_NET_LIMIT:
		if (restrict_)
			return 0;
		n->any = true;
		n->limits = arg;
		return 1;
	default:
		return 0;
	}
	if (restrict_ && (o == CLI_O_PUBLISH || o == CLI_O_DNS))
		return 0;
	if (*count == max) {
		fprintf(stderr, "%s: at most %d %s\n", prog, max, flag);
		return -1;
	}
	list[(*count)++] = arg;
	list[*count] = NULL;
	n->any = true;
	return 1;
}

void cli_net_apply(struct cli_net *n, struct cove_config *cfg)
{
	if (!n->any)
		return;
	cfg->net.mode = n->mode_set ? n->mode : COVE_NET_RULES;
	cfg->net.allow = n->nallow ? n->allow : NULL;
	cfg->net.deny = n->ndeny ? n->deny : NULL;
	cfg->net_publish = n->npublish ? n->publish : NULL;
	cfg->net_dns = n->ndns ? n->dns : NULL;
	cfg->net_limits = n->limits;
	cfg->proxy_rules = n->proxy_rules;
}

int cli_net(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		CLI_NET_OPTIONS,
		{ 0 },
	};
	const char *prog = "cove net";
	static struct cli_net n;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int k = cli_net_option(&n, o, optarg, prog, true);
		if (k < 0)
			return 2;
		if (k > 0)
			continue;
		if (o == 'h') {
			fputs(net_usage, stdout);
			return 0;
		}
		fprintf(stderr, "%s: unknown or incomplete option '%s'\n%s", prog, argv[optind - 1],
		        net_usage);
		return 2;
	}
	if (argc - optind != 1) {
		fprintf(stderr, "%s: needs one sandbox name\n%s", prog, net_usage);
		return 2;
	}
	const char *name = argv[optind];
	if (cli_check_name(name, prog) < 0)
		return 2;
	struct cove_net_policy p = {
		.mode = n.mode_set ? n.mode
		        : n.nallow ? COVE_NET_RULES
		                   : COVE_NET_NONE,
		.allow = n.nallow ? n.allow : NULL,
		.deny = n.ndeny ? n.deny : NULL,
	};
	char err[512];
	struct cove_sandbox *sb;
	if (cove_open(name, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	/* The credential rules are read and validated in full before either
	 * change; --proxy-rules alone leaves the policy as it is. */
	bool policy = n.mode_set || n.nallow || n.ndeny || !n.proxy_rules;
	int r = n.proxy_rules ? cove_net_proxy(sb, n.proxy_rules, err, sizeof(err)) : 0;
	if (r == 0 && policy)
		r = cove_net_set(sb, &p, err, sizeof(err));
	cove_free(sb);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return r == -EINVAL ? 2 : 1;
	}
	return 0;
}

/* --verify: the chain of the journal on fd (closed).  Without coved's
 * tail in memory, an edit of the very last line cannot show here (the API's
 * ?verify=1 sees it). */
static int verify_journal(int fd, const char *name, const char *prog)
{
	struct jchain c;
	jchain_start(&c);
	int rc = jchain_verify_fd(&c, fd);
	close(fd);
	if (rc < -1) {
		fprintf(stderr, "%s: journal of %s: %s\n", prog, name, strerror(-rc));
		return 1;
	}
	if (rc == 0) {
		printf("journal of %s: whole, %llu lines\n", name, (unsigned long long)c.lines);
		return 0;
	}
	printf("journal of %s: broken at line %llu: %s\n", name, (unsigned long long)c.bad, c.why);
	return 1;
}

/* --otlp URL: the journal on fd (closed) as spans to an OTLP/HTTP
 * collector, the same spans coved's live export sends
 * (daemon/trace/span.h); headers from OTEL_EXPORTER_OTLP_HEADERS. */
static int export_journal(int fd, const char *name, const char *ep, const char *prog)
{
	char err[512];
	char *url = trace_traces_url(ep);
	struct tracer_settings s;
	if (!url) {
		close(fd);
		fprintf(stderr, "%s: --otlp needs an http:// or https:// URL\n", prog);
		return 2;
	}
	if (tracer_settings(NULL, &s, err, sizeof(err)) < 0) {
		close(fd);
		free(url);
		fprintf(stderr, "%s: %s\n", prog, err);
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	long n = trace_export_journal(fd, url, s.service, &s.headers, false, err, sizeof(err));
	close(fd);
	tracer_settings_free(&s);
	free(url);
	if (n < 0) {
		fprintf(stderr, "%s: journal of %s: %s\n", prog, name, err);
		return 1;
	}
	printf("journal of %s: %ld spans sent\n", name, n);
	return 0;
}

int cli_logs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "egress", no_argument, NULL, 'E' },
		{ "journal", no_argument, NULL, 'J' },
		{ "verify", no_argument, NULL, 'V' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "otlp", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *prog = "cove logs";
	bool egress = false, journal = false, verify = false;
	const char *state_dir = getenv("COVED_STATE_DIR");
	const char *otlp = NULL;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o == 'E') {
			egress = true;
		} else if (o == 'J') {
			journal = true;
		} else if (o == 'V') {
			verify = true;
		} else if (o == 'S') {
			state_dir = optarg;
		} else if (o == 'O') {
			otlp = optarg;
			journal = true;
		} else if (o == 'h') {
			fputs(logs_usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n%s", prog, argv[optind - 1],
			        logs_usage);
			return 2;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "%s: needs one sandbox name\n%s", prog, logs_usage);
		return 2;
	}
	const char *name = argv[optind];
	if (cli_check_name(name, prog) < 0)
		return 2;
	if (egress && journal) {
		fprintf(stderr, "%s: --egress and --journal exclude each other\n%s", prog,
		        logs_usage);
		return 2;
	}
	if (verify && !journal) {
		fprintf(stderr, "%s: --verify goes with --journal\n%s", prog, logs_usage);
		return 2;
	}
	char err[512];
	char path[4200];
	if (journal) {
		/* coved's journal outlives the sandbox (and its pauses): no cove_open. */
		snprintf(path, sizeof(path), "%s/journal/%s.jsonl",
		         state_dir && *state_dir ? state_dir : "/var/lib/coved", name);
	} else {
		struct cove_sandbox *sb;
		if (cove_open(name, &sb, err, sizeof(err)) < 0) {
			fprintf(stderr, "%s: %s\n", prog, err);
			return 1;
		}
		snprintf(path, sizeof(path), "%s/%s", cove_sandbox_dir(sb),
		         egress ? "egress.log" : "console.log");
		cove_free(sb);
	}
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT && journal) {
			fprintf(stderr, "%s: sandbox %s has no coved journal in %s\n", prog, name,
			        path);
			return 1;
		}
		if (errno == ENOENT && egress) {
			fprintf(stderr,
			        "%s: sandbox %s has no egress log (started without networking)\n",
			        prog, name);
			return 1;
		}
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return 1;
	}
	if (verify)
		return verify_journal(fd, name, prog);
	if (otlp)
		return export_journal(fd, name, otlp, prog);
	char buf[65536];
	ssize_t k;
	int status = 0;
	while ((k = read(fd, buf, sizeof(buf))) > 0) {
		/* Guest text: no control sequences reach the terminal. */
		for (ssize_t i = 0; i < k; i++)
			if (((unsigned char)buf[i] < 0x20 && buf[i] != '\n' && buf[i] != '\t') ||
			    buf[i] == 0x7f)
				buf[i] = '?';
		if (fwrite(buf, 1, (size_t)k, stdout) != (size_t)k) {
			status = 1;
			break;
		}
	}
	if (k < 0)
		status = 1;
	close(fd);
	return status;
}
