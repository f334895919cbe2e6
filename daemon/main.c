/* coved: the sandbox daemon (docs/api.md).
 *
 *   coved [--config FILE] [--foreground]
 *   coved [--config FILE] --check
 *
 * Serves the control plane (and the envd surface) on a Unix socket and
 * optionally TCP.  Sandboxes are detached cove-vmm processes: stopping
 * coved leaves them running, and the next coved adopts them again. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cove.h"
#include "daemon/cluster/cluster.h"
#include "daemon/conf/config.h"
#include "daemon/conf/keys.h"
#include "daemon/envd/envd.h"
#include "daemon/sandboxes/builds.h"
#include "daemon/sandboxes/events.h"
#include "daemon/sandboxes/hourly.h"
#include "daemon/sandboxes/lifecycle.h"
#include "daemon/sandboxes/pool.h"
#include "daemon/sandboxes/record.h"
#include "daemon/sandboxes/sampler.h"
#include "daemon/sandboxes/snapshots.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/synthetic.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/warm.h"
#include "daemon/server.h"
#include "daemon/trace/tracer.h"

static const char usage[] = "usage: coved [--config FILE] [--foreground | --check]\n"
                            "  --config FILE  JSON config (docs/api.md); default "
                            "/etc/coved/coved.json when it exists\n"
                            "  --foreground   stay attached, log to stderr\n"
                            "  --check        read the config and keys file, print one line "
                            "(tenants, TCP listener) and exit\n";

/* check_line() - coved --check's line (cove doctor prints it): the
 * tenants of the keys file and what the TCP listener would be, read
 * through the loaders coved itself starts with. */
static void check_line(const struct coved *d)
{
	const struct coved_config *c = &d->cfg;
	printf("%zu tenant%s, TCP listener: %s%s%s\n", d->ntenants, d->ntenants == 1 ? "" : "s",
	       !c->tcp       ? "none"
	       : c->tls_cert ? "TLS on "
	                     : "plain HTTP on ",
	       c->tcp ? c->tcp : "",
	       c->tcp && !c->tls_cert ? " (keys and tokens in cleartext)" : "");
}

static void *reaper(void *arg)
{
	struct coved *d = arg;
	pthread_mutex_lock(&d->stop_mu);
	while (!d->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&d->stop_cond, &d->stop_mu, &ts);
		if (d->stopping)
			break;
		pthread_mutex_unlock(&d->stop_mu);
		coved_sb_tick(d);
		coved_builds_expire(d);
		pthread_mutex_lock(&d->stop_mu);
	}
	pthread_mutex_unlock(&d->stop_mu);
	return NULL;
}

static int make_dirs(const struct coved_config *c)
{
	const char *subs[] = { "",         "/sandboxes", "/snapshots",
		               "/journal", "/builds",    "/template-files" };
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		char p[4200];
		snprintf(p, sizeof(p), "%s%s", c->state_dir, subs[i]);
		if (mkdir(p, 0700) < 0 && errno != EEXIST) {
			fprintf(stderr, "coved: cannot create %s: %s\n", p, strerror(errno));
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "check", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *config = NULL;
	bool foreground = false, check = false;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (o == 'c') {
			config = optarg;
		} else if (o == 'f') {
			foreground = true;
		} else if (o == 'k') {
			check = true;
		} else if (o == 'h') {
			fputs(usage, stdout);
			return 0;
		} else {
			fprintf(stderr, "coved: unknown or incomplete option '%s'\n%s",
			        argv[optind - 1], usage);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "coved: unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	if (!config && access("/etc/coved/coved.json", F_OK) == 0)
		config = "/etc/coved/coved.json";
	static struct coved d;
	char err[600];
	/* The per-node ranges go to libcove through the environment, before
	 * any libcove call. */
	if (coved_config_load(config, &d.cfg, err, sizeof(err)) < 0 ||
	    coved_config_setenv(&d.cfg, err, sizeof(err)) < 0 ||
	    coved_keys_load(d.cfg.api_keys_file, &d.keys, &d.nkeys, err, sizeof(err)) < 0) {
		fprintf(stderr, "coved: %s\n", err);
		return 1;
	}
	if (coved_tenants_init(&d) < 0) {
		fprintf(stderr, "coved: out of memory\n");
		return 1;
	}
	if (check) {
		check_line(&d);
		return 0;
	}
	if (make_dirs(&d.cfg) < 0)
		return 1;
	if (!foreground && daemon(0, 0) < 0) {
		fprintf(stderr, "coved: daemon: %s\n", strerror(errno));
		return 1;
	}
	/* Every thread inherits the mask; main alone takes the signals. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&d.mu, NULL);
	pthread_mutex_init(&d.m.mu, NULL);
	pthread_mutex_init(&d.stop_mu, NULL);
	pthread_cond_init(&d.stop_cond, NULL);
	/* Traces before any journal line: off when no endpoint is set. */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	d.tracer = tracer_start(&d.cfg, err, sizeof(err));
	if (!d.tracer && err[0]) {
		fprintf(stderr, "coved: %s\n", err);
		return 1;
	}
	/* Events first: an adoption that finds a sandbox dead says so. */
	if (coved_events_init(&d, err, sizeof(err)) < 0) {
		fprintf(stderr, "coved: %s\n", err);
		return 1;
	}
	int n = coved_adopt_all(&d);
	if (n < 0) {
		fprintf(stderr, "coved: cannot read %s/sandboxes: %s\n", d.cfg.state_dir,
		        strerror(-n));
		return 1;
	}
	const char *synth = getenv("COVED_TEST_SYNTHETIC_SANDBOXES");
	if (synth) {
		size_t ns;
		if (coved_synthetic_parse(synth, &ns, err, sizeof(err)) < 0 ||
		    coved_synthetic_add(&d, ns, getenv("COVED_TEST_SYNTHETIC_TENANT"), err,
		                        sizeof(err)) < 0) {
			fprintf(stderr, "coved: %s\n", err);
			return 1;
		}
		fprintf(stderr,
		        "coved: TEST MODE: %zu synthetic sandboxes with no VM "
		        "(COVED_TEST_SYNTHETIC_SANDBOXES)\n",
		        ns);
	}
	if (coved_builds_init(&d, err, sizeof(err)) < 0) {
		fprintf(stderr, "coved: %s\n", err);
		return 1;
	}
	if (d.cfg.net_pool_size && d.cfg.network) {
		/* Sandboxes' networks made ahead of time; without networking on
		 * this host the filler says why on /metrics and creates set up
		 * their own (failing as they would have). */
		struct cove_config nc;
		cove_config_defaults(&nc);
		if (cove_net_pool_new(&nc, d.cfg.net_pool_size, &d.net_pool, err, sizeof(err)) <
		    0) {
			fprintf(stderr, "coved: %s\n", err);
			return 1;
		}
	} else if (d.cfg.network && cove_net_pool_clean(err, sizeof(err)) < 0) {
		/* Without a pool of its own, what a dead coved's pool left still
		 * goes (namespaces, links, cove-egress processes). */
		fprintf(stderr, "coved: the network pool's leftovers: %s\n", err);
	}
	if (coved_pool_start(&d, err, sizeof(err)) < 0) {
		fprintf(stderr, "coved: %s\n", err);
		return 1;
	}
	if (coved_warm_start(&d, err, sizeof(err)) < 0) {
		fprintf(stderr, "coved: %s\n", err);
		return 1;
	}
	if (envd_init(&d) < 0) {
		fprintf(stderr, "coved: the envd surface would not start\n");
		return 1;
	}
	if (coved_cluster_start(&d, err, sizeof(err)) < 0) {
		fprintf(stderr, "coved: %s\n", err);
		return 1;
	}
	if (coved_serve(&d, err, sizeof(err)) < 0) {
		fprintf(stderr, "coved: %s\n", err);
		return 1;
	}
	if (pthread_create(&d.reaper, NULL, reaper, &d) != 0) {
		fprintf(stderr, "coved: cannot start the reaper thread\n");
		return 1;
	}
	if (coved_sampler_start(&d, err, sizeof(err)) < 0) {
		fprintf(stderr, "coved: %s\n", err);
		return 1;
	}
	fprintf(stderr, "coved: serving %s%s%s%s, %zu tenants, %d sandboxes adopted\n",
	        d.cfg.socket, d.cfg.tcp ? " and " : "", d.cfg.tcp ? d.cfg.tcp : "",
	        d.cfg.tcp ? (d.cfg.tls_cert ? " (TLS)" : " (plain HTTP)") : "", d.ntenants, n);
	int sig;
	sigwait(&set, &sig);
	fprintf(stderr, "coved: stopping (sandboxes keep running)\n");
	coved_events_close(&d); /* event and journal streams end */
	coved_unserve(&d);
	pthread_mutex_lock(&d.stop_mu);
	d.stopping = true;
	pthread_cond_signal(&d.stop_cond);
	pthread_mutex_unlock(&d.stop_mu);
	pthread_join(d.reaper, NULL);
	coved_sampler_stop(&d);
	coved_cluster_stop(&d); /* its lease stays: a restart within the TTL keeps it */
	/* Warm sandboxes and pre-spawned VMMs that serve no sandbox end
	 * with us. */
	coved_warm_stop(&d);
	coved_pool_stop(&d);
	envd_fini(&d);
	coved_events_fini(&d);
	tracer_stop(d.tracer); /* what is queued goes, within the timeouts */
	d.tracer = NULL;
	cove_net_pool_free(d.net_pool); /* slots not taken; taken ones are sandboxes' */
	d.net_pool = NULL;
	/* Detached sandboxes outlive their handles. */
	coved_sb_release_all(&d);
	coved_hourly_free(&d);
	coved_snap_index_free();
	unlink(d.cfg.socket);
	/* A template build still running uses the config: it ends with the
	 * process, and its record says so at the next start. */
	if (!coved_builds_quiet(&d, 2000))
		return 0;
	coved_keys_free(d.keys, d.nkeys);
	free(d.tenants);
	coved_config_free(&d.cfg);
	return 0;
}
