/* cove run: start a sandbox, copy files in, run one command with its
 * output streamed, copy files out, tear the sandbox down.  Exits with the
 * command's status (128+N when a signal N killed it, 124 on --timeout).
 *
 * The sandbox is restored from a template: the base template of its image,
 * CPUs, memory and disk size (built on first use, lib/template.h), or the
 * one --template names.  --cold boots it instead, and so do the network
 * options (a base template has no NIC: a restore cannot add one), but for
 * --publish alone: its ports are relayed through the agent (cli/port.h),
 * which needs no NIC. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/exec_io.h"
#include "cli/net.h"
#include "cli/options.h"
#include "cli/port.h"
#include "cli/run.h"
#include "cli/template.h"
#include "cove.h"
#include "lib/template/template.h"

static const char run_usage[] =
    "usage: cove run [--cpus N] [--memory MiB] [--image minimal|debian|PATH]\n"
    "                [--kernel PATH] [--hostname NAME] [-e K=V]... [-w DIR] [-u USER]\n"
    "                [--timeout S] [--put LOCAL:GUEST]... [--get GUEST:LOCAL]...\n"
    "                [--cold | --template NAME] [LIMITS] [-it] -- CMD [ARGS...]\n"
    "  restored from the base template of the image, CPUs, memory and disk size\n"
    "  (built once, cached by the hash of its inputs); --cold boots it, as do the\n"
    "  network options; --template NAME restores a `cove template build` one;\n"
    "  --publish alone relays host ports through the agent (no NIC, no root)\n" CLI_LIMIT_USAGE
        CLI_NET_USAGE;

/* Restores *sb from the template name (NULL: cfg's base template), built
 * or rebuilt first when its inputs changed.  0, or -1 with a message. */
static int start_from_template(const struct cove_config *cfg, const char *name,
                               struct cove_sandbox **sb, const char *prog)
{
	char err[600], dir[4200];
	struct cove_template_manifest m = { 0 };
	struct cove_template_spec *spec = &m.spec;
	int r;
	if (name) {
		if ((r = cove_template_load(name, &m, err, sizeof(err))) == 0) {
			/* Its snapshot restores in the cove-vmm that runs it now:
			 * that one's hash is an input. */
			char *vmm = realpath(cfg->vmm, NULL);
			if (!vmm)
				r = -1, snprintf(err, sizeof(err),
				                 "cove-vmm '%s': cannot resolve it", cfg->vmm);
			free(spec->vmm);
			spec->vmm = vmm;
		}
	} else {
		r = cove_template_base_spec(spec, cfg, COVE_TEMPLATE_NET_OFF, err, sizeof(err));
	}
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		cove_template_manifest_free(&m);
		return -1;
	}
	struct cove_template_io io;
	cli_template_io(&io, prog, false);
	int lockfd;
	/* One built from an image, a parent or a folder is used as it is. */
	r = name && cove_template_sealed(spec)
	        ? cove_template_use(name, dir, sizeof(dir), &lockfd, err, sizeof(err))
	        : cove_template_ensure(spec, false, &io, dir, sizeof(dir), &lockfd, err,
	                               sizeof(err));
	if (r != 0) {
		fprintf(stderr, "%s: template %s: %s\n", prog, spec->name, err);
		cove_template_manifest_free(&m);
		return -1;
	}
	struct cove_config rc = *cfg;
	rc.disk_size = 0; /* the template's */
	rc.hostname = cfg->hostname ? cfg->hostname : "cove";
	if (spec->net != COVE_TEMPLATE_NET_OFF && rc.net.mode == COVE_NET_OFF)
		rc.net.mode = COVE_NET_NONE; /* not the build's policy */
	r = cove_restore(&rc, dir, sb, err, sizeof(err));
	close(lockfd);
	cove_template_manifest_free(&m);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return -1;
	}
	return 0;
}

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
	enum { O_PUT = CLI_O_FIRST_FREE, O_GET, O_COLD, O_TEMPLATE };
	static const struct option opts[] = {
		{ "cpus", required_argument, NULL, CLI_O_CPUS },
		{ "memory", required_argument, NULL, CLI_O_MEMORY },
		{ "image", required_argument, NULL, CLI_O_IMAGE },
		{ "kernel", required_argument, NULL, CLI_O_KERNEL },
		{ "hostname", required_argument, NULL, CLI_O_HOSTNAME },
		{ "timeout", required_argument, NULL, CLI_O_TIMEOUT },
		{ "env", required_argument, NULL, 'e' },
		{ "workdir", required_argument, NULL, 'w' },
		{ "user", required_argument, NULL, 'u' },
		{ "interactive", no_argument, NULL, 'i' },
		{ "tty", no_argument, NULL, 't' },
		{ "put", required_argument, NULL, O_PUT },
		{ "get", required_argument, NULL, O_GET },
		{ "cold", no_argument, NULL, O_COLD },
		{ "template", required_argument, NULL, O_TEMPLATE },
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
	const char *tmpl = NULL, *sized = NULL;
	bool cold = false;
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
		if (k > 0) {
			if (o == CLI_O_CPUS || o == CLI_O_MEMORY || o == CLI_O_IMAGE ||
			    o == CLI_O_KERNEL || o == CLI_O_DISK_SIZE)
				sized = argv[optind - 1];
			continue;
		}
		switch (o) {
		case O_COLD:
			cold = true;
			break;
		case O_TEMPLATE:
			if (!cove_template_name_valid(optarg)) {
				fprintf(stderr, "%s: --template: invalid template name '%s'\n",
				        prog, optarg);
				goto out;
			}
			tmpl = optarg;
			break;
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
	if (tmpl && (cold || sized)) {
		fprintf(stderr,
		        "%s: --template takes its image and sizes from the template: no %s\n", prog,
		        cold ? "--cold" : sized);
		goto out;
	}

	char err[512];
	struct cove_sandbox *sb = NULL;
	/* --publish without any other network option: relayed by the agent. */
	struct net_publish pub[CLI_MAX_LIST];
	struct cli_fwd *fwd[CLI_MAX_LIST] = { NULL };
	int npub = 0;
	if (net.npublish && !net.mode_set && !net.nallow && !net.ndeny && !net.ndns &&
	    !net.limits && !net.proxy_rules) {
		for (int i = 0; i < net.npublish; i++)
			if (net_publish_parse(net.publish[i], &pub[npub++], err, sizeof(err)) < 0) {
				fprintf(stderr, "%s: %s\n", prog, err);
				goto out;
			}
		net.npublish = 0;
		net.publish[0] = NULL;
		net.any = false;
	}
	cli_net_apply(&net, &cfg);
	if (tmpl || (!cold && !net.any)) {
		if (start_from_template(&cfg, tmpl, &sb, prog) < 0) {
			status = 125;
			goto out;
		}
	} else if (cove_start(&cfg, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		status = 125;
		goto out;
	}
	status = 125;
	for (int i = 0; i < npub; i++) {
		fwd[i] = cli_fwd_start(sb, "cove run", pub[i].addr, pub[i].host_port,
		                       pub[i].guest_port, 0, err, sizeof(err));
		if (!fwd[i]) {
			fprintf(stderr, "%s: --publish: %s\n", prog, err);
			goto stop;
		}
	}
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
	for (int i = 0; i < npub; i++)
		cli_fwd_stop(fwd[i]);
	cove_free(sb);
out:
	free(image);
	return status;
}
