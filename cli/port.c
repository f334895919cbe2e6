/* cove port NAME GUESTPORT [--listen [ADDR:]PORT] [--idle-timeout S]: a
 * local listener relayed to a port in a running sandbox through its agent,
 * until a signal or the sandbox's end. */
#include "cli/port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bytepipe.h"
#include "clock.h"
#include "cove.h"
#include "errf.h"

struct cli_fwd {
	struct cove_sandbox *sb;
	char name[64];
	int lfd, stop_fd;
	uint16_t port, guest_port;
	int idle_ms;
	pthread_t accepter;
	atomic_uint conns;
};

struct fwd_conn {
	struct cli_fwd *f;
	int fd;
};

static const char usage[] =
    "usage: cove port NAME GUESTPORT [--listen [ADDR:]PORT] [--idle-timeout S]\n"
    "  relays a local TCP listener (default 127.0.0.1:GUESTPORT; PORT 0 picks one)\n"
    "  to GUESTPORT on the sandbox's loopback, through its agent (no NIC needed),\n"
    "  until interrupted; prints 'NAME:GUESTPORT on ADDR:PORT' once listening\n";

static void *conn_main(void *arg)
{
	struct fwd_conn *c = arg;
	struct cli_fwd *f = c->f;
	char err[512];
	int g = cove_port_open(f->sb, f->guest_port, 0, err, sizeof(err));
	if (g < 0) {
		fprintf(stderr, "cove port: %s:%u: %s\n", f->name, f->guest_port, err);
	} else {
		struct bytepipe_opts o = { .idle_ms = f->idle_ms, .stop_fd = f->stop_fd };
		int r = bytepipe_run(c->fd, g, &o, NULL);
		if (r == -ETIMEDOUT)
			fprintf(stderr, "cove port: %s:%u: a connection idle for %d s was closed\n",
			        f->name, f->guest_port, f->idle_ms / 1000);
		close(g);
	}
	close(c->fd);
	free(c);
	atomic_fetch_sub(&f->conns, 1);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct cli_fwd *f = arg;
	for (;;) {
		struct pollfd p[2] = { { .fd = f->lfd, .events = POLLIN },
			               { .fd = f->stop_fd, .events = POLLIN } };
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (atomic_fetch_add(&f->conns, 1) >= CLI_FWD_CONNS_MAX) {
			atomic_fetch_sub(&f->conns, 1);
			close(fd); /* over the bound: refused */
			continue;
		}
		struct fwd_conn *c = malloc(sizeof(*c));
		pthread_attr_t a;
		pthread_t t;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (c) {
			c->f = f;
			c->fd = fd;
		}
		if (!c || pthread_create(&t, &a, conn_main, c) != 0) {
			free(c);
			close(fd);
			atomic_fetch_sub(&f->conns, 1);
		}
		pthread_attr_destroy(&a);
	}
	return NULL;
}

struct cli_fwd *cli_fwd_start(struct cove_sandbox *sb, const char *name, uint32_t addr,
                              uint16_t port, uint16_t guest_port, unsigned idle_s, char *err,
                              size_t errlen)
{
	struct cli_fwd *f = calloc(1, sizeof(*f));
	if (!f) {
		errf(err, errlen, -ENOMEM, "out of memory");
		return NULL;
	}
	f->sb = sb;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->guest_port = guest_port;
	f->idle_ms = (int)(idle_s ? idle_s : CLI_FWD_IDLE_S) * 1000;
	f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_port = htons(port),
		                  .sin_addr.s_addr = htonl(addr) };
	int one = 1;
	char a[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &sa.sin_addr, a, sizeof(a));
	if (f->stop_fd < 0 || f->lfd < 0) {
		errf(err, errlen, -errno, "%s", strerror(errno));
		goto fail;
	}
	(void)setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(f->lfd, 128) < 0) {
		errf(err, errlen, -errno, "cannot listen on %s:%u: %s", a, port, strerror(errno));
		goto fail;
	}
	socklen_t sl = sizeof(sa);
	getsockname(f->lfd, (struct sockaddr *)&sa, &sl);
	f->port = ntohs(sa.sin_port);
	if (pthread_create(&f->accepter, NULL, accept_main, f) != 0) {
		errf(err, errlen, -EAGAIN, "no thread for the listener");
		goto fail;
	}
	return f;
fail:
	if (f->lfd >= 0)
		close(f->lfd);
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	free(f);
	return NULL;
}

uint16_t cli_fwd_port(const struct cli_fwd *f)
{
	return f->port;
}

void cli_fwd_stop(struct cli_fwd *f)
{
	if (!f)
		return;
	uint64_t one = 1;
	(void)!write(f->stop_fd, &one, sizeof(one));
	pthread_join(f->accepter, NULL);
	close(f->lfd);
	/* Each relay sees stop_fd and ends; wait for them to let go of f. */
	int64_t until = mono_ms() + 5000;
	while (atomic_load(&f->conns) && mono_ms() < until)
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	if (atomic_load(&f->conns))
		return; /* a relay stuck in a call: f stays, the process is ending */
	close(f->stop_fd);
	free(f);
}

/* parse_listen() - "[ADDR:]PORT", PORT 0-65535, ADDR IPv4. */
static int parse_listen(const char *s, uint32_t *addr, uint16_t *port)
{
	const char *colon = strrchr(s, ':');
	const char *ps = colon ? colon + 1 : s;
	char host[INET_ADDRSTRLEN] = "127.0.0.1";
	if (colon) {
		if ((size_t)(colon - s) >= sizeof(host) || colon == s)
			return -EINVAL;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = 0;
	}
	struct in_addr ia;
	char *end;
	unsigned long p = strtoul(ps, &end, 10);
	if (!*ps || *end || p > 65535 || inet_pton(AF_INET, host, &ia) != 1)
		return -EINVAL;
	*addr = ntohl(ia.s_addr);
	*port = (uint16_t)p;
	return 0;
}

int cli_port(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "idle-timeout", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *listen_spec = NULL;
	unsigned long idle_s = CLI_FWD_IDLE_S;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		switch (o) {
		case 'l':
			listen_spec = optarg;
			break;
		case 'i':
			idle_s = strtoul(optarg, &end, 10);
			if (*end || idle_s < 1 || idle_s > 86400) {
				fprintf(stderr,
				        "cove port: --idle-timeout takes 1-86400 seconds\n");
				return 2;
			}
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "cove port: unknown or incomplete option '%s'\n%s",
			        argv[optind - 1], usage);
			return 2;
		}
	}
	if (argc - optind != 2) {
		fputs(usage, stderr);
		return 2;
	}
	const char *name = argv[optind];
	char *end;
	unsigned long gp = strtoul(argv[optind + 1], &end, 10);
	if (*end || gp < 1 || gp > 65535) {
		fprintf(stderr, "cove port: GUESTPORT must be 1-65535, got '%s'\n",
		        argv[optind + 1]);
		return 2;
	}
	uint32_t addr = 0x7f000001;
	uint16_t port = (uint16_t)gp;
	if (listen_spec && parse_listen(listen_spec, &addr, &port) < 0) {
		fprintf(stderr, "cove port: --listen needs [ADDR:]PORT (IPv4), got '%s'\n",
		        listen_spec);
		return 2;
	}
	/* Signals wait for sigtimedwait here; the relays' threads never see them. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	char err[512];
	struct cove_sandbox *sb;
	if (cove_open(name, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove port: %s\n", err);
		return 1;
	}
	struct cli_fwd *f =
	    cli_fwd_start(sb, name, addr, port, (uint16_t)gp, (unsigned)idle_s, err, sizeof(err));
	if (!f) {
		fprintf(stderr, "cove port: %s\n", err);
		cove_free(sb);
		return 1;
	}
	struct in_addr ia = { .s_addr = htonl(addr) };
	char a[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &ia, a, sizeof(a));
	printf("%s:%lu on %s:%u\n", name, gp, a, cli_fwd_port(f));
	fflush(stdout);
	int status = 0;
	for (;;) {
		struct timespec second = { .tv_sec = 1 };
		if (sigtimedwait(&set, NULL, &second) > 0)
			break;
		char why[512];
		if (cove_sandbox_exited(sb, 0, why, sizeof(why))) {
			fprintf(stderr, "cove port: sandbox %s ended: %s\n", name, why);
			status = 1;
			break;
		}
	}
	cli_fwd_stop(f);
	cove_free(sb);
	return status;
}
