/* cove-egress: the per-sandbox egress enforcement process (issue 14;
 * net-contract.md, "cove-egress").  `cove-egress --config-fd N`.
 * Apply the first table, fork the nft keeper (egress/nftd.h), set up the
 * rest (sockets, NFLOG), confine, say `ok` on ready_fd once the keeper
 * is confined too, then serve on one event loop until SIGTERM. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "confine.h"
#include "ctl.h"
#include "dns.h"
#include "egress.h"
#include "elog.h"
#include "errf.h"
#include "io.h"
#include "keeper.h"
#include "nflog.h"
#include "nft.h"
#include "nftd.h"
#include "policy.h"
#include "proxy.h"
#include "resolver.h"
#include "tlsca.h"

#define CONFIG_MAX (1 << 20)

static void usage(void)
{
	fprintf(stderr, "usage: cove-egress --config-fd N\n");
}

/* One line to ready_fd (and stderr), for the launcher to show. */
static void report(int ready_fd, const char *line)
{
	fprintf(stderr, "cove-egress: %s\n", line);
	if (ready_fd >= 0) {
		char buf[600];
		int n = snprintf(buf, sizeof(buf), "%s\n", line);
		if (n > 0 &&
		    write_all(ready_fd, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1))
			fprintf(stderr, "cove-egress: ready_fd: %s\n", strerror(errno));
	}
}

static void on_signal(struct ev *ev, uint32_t events)
{
	(void)events;
	struct egress *e = (struct egress *)((char *)ev - offsetof(struct egress, sig));
	struct signalfd_siginfo si;
	if (read(ev->fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		e->loop.stop = true;
}

/* Touch what would otherwise be loaded lazily after confinement: ldns's
 * parser and writer, jansson's hash seed (it reads /dev/urandom). */
static void warm_up(struct egress *e)
{
	json_object_seed(0);
	struct dns_question q = { .name_ok = true, .qtype = 1, .qclass = 1 };
	strcpy(q.name, "warm.up");
	uint8_t msg[128], out[512];
	long n = dns_build_query(&q, 1, msg, sizeof(msg));
	struct dns_question q2;
	if (n > 0 && dns_parse_query(msg, (size_t)n, &q2) == 0) {
		msg[2] |= 0x80;
		struct dns_filter f = { .hosts = e->cfg.hosts,
			                .nhosts = e->cfg.nhosts,
			                .max = 512 };
		q2.id = 1;
		(void)dns_filter_answer(msg, (size_t)n, 1, &q2, &f, out, sizeof(out));
	}
	char t[40];
	elog_format_time(0, t, sizeof(t));
}

/* What both halves start from: the first table, applied before the fork
 * (so libnftables' cache is warm in the keeper). */
static int setup_table(struct egress *e, char *err, size_t errlen)
{
	int r = loop_init(&e->loop);
	if (r)
		return errf(err, errlen, r, "epoll: %s", strerror(-r));
	e->nft = enft_open();
	if (!e->nft)
		return errf(err, errlen, -ENOMEM, "libnftables: cannot create a context");
	struct netpolicy p = e->cfg.policy;
	memset(&e->cfg.policy, 0, sizeof(e->cfg.policy));
	r = egress_apply_policy(e, &p, err, errlen);
	netpolicy_free(&p);
	return r;
}

/* The parser's part, after the fork: the nft context and the ctl listener
 * are the keeper's. */
static int setup(struct egress *e, char *err, size_t errlen)
{
	int r;
	enft_close(e->nft);
	e->nft = NULL;
	if (e->cfg.ctl_fd >= 0)
		close(e->cfg.ctl_fd);
	e->cfg.ctl_fd = -1;
	if ((r = keeper_watch(e)))
		return errf(err, errlen, r, "the nft keeper's pair: %s", strerror(-r));
	if ((r = resolver_open(e)))
		return errf(err, errlen, r, "resolver on the gateway's port 53: %s", strerror(-r));
	if ((r = proxy_open(e)))
		return errf(err, errlen, r, "proxy ports on the gateway: %s", strerror(-r));
	if ((r = publish_open(e)))
		return errf(err, errlen, r, "publish listeners: %s", strerror(-r));
	if ((r = egress_nflog_open(e)))
		return errf(err, errlen, r, "NFLOG group: %s", strerror(-r));
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	e->sig.fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	e->sig.fn = on_signal;
	if (e->sig.fd < 0 || (r = loop_add(&e->loop, &e->sig, EPOLLIN)))
		return errf(err, errlen, -errno, "signalfd: %s", strerror(errno));
	/* The sandbox CA; without it nothing is intercepted (ctl "proxy"
	 * says so), the rest works. */
	r = tlsca_init(&e->ca, err, errlen);
	if (r)
		fprintf(stderr, "cove-egress: %s (no credential injection)\n", err);
	e->tls_ok = r == 0;
	warm_up(e);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "--config-fd")) {
		usage();
		return 2;
	}
	char *end;
	long cfd = strtol(argv[2], &end, 10);
	if (*end || end == argv[2] || cfd < 0 || cfd > 1 << 20) {
		usage();
		return 2;
	}
	char *text = malloc(CONFIG_MAX);
	if (!text)
		return 1;
	ssize_t n = read_full((int)cfd, text, CONFIG_MAX);
	close((int)cfd);
	static struct egress e;
	char err[512];
	if (n < 0 || n >= CONFIG_MAX) {
		report(-1, n < 0 ? "cannot read the config fd" : "the config is over 1 MiB");
		return 1;
	}
	int r = egress_config_parse(text, (size_t)n, &e.cfg, err, sizeof(err));
	free(text);
	if (r) {
		report(-1, err);
		return 1;
	}
	netpolicy_init(&e.policy, NETPOLICY_NONE);
	if (setup_table(&e, err, sizeof(err))) {
		report(e.cfg.ready_fd, err);
		return 1;
	}
	const char *sl = getenv("COVE_EGRESS_SECCOMP");
	int seccomp_log = sl && !strcmp(sl, "log");
	/* The privilege split: the child keeps nf_tables, we the parsers. */
	r = nftd_fork(&e);
	if (r == 0)
		return keeper_main(&e, seccomp_log);
	if (r < 0) {
		snprintf(err, sizeof(err), "fork the nft keeper: %s", strerror(-r));
		report(e.cfg.ready_fd, err);
		return 1;
	}
	if (setup(&e, err, sizeof(err)) || confine(CONFINE_PARSER, seccomp_log, err, sizeof(err)) ||
	    nftd_wait_ready(&e, err, sizeof(err))) {
		report(e.cfg.ready_fd, err);
		return 1;
	}
	if (e.cfg.ready_fd >= 0) {
		if (write_all(e.cfg.ready_fd, "ok\n", 3))
			return 1;
		close(e.cfg.ready_fd);
	}
	r = loop_run(&e.loop);
	return r || e.keeper_gone ? 1 : 0;
}
