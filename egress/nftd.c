/* The nft keeper and its pairs with the parser (egress/nftd.h). */
#include "nftd.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confine.h"
#include "ctl.h"
#include "egress.h"
#include "errf.h"
#include "nft.h"

/* ---- the wire --------------------------------------------------------- */

int nftd_msg_parse(const void *buf, size_t len, struct nftd_msg *out)
{
	struct nftd_wire_hdr h;
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, buf, sizeof(h));
	if (h.type != NFTD_PIN || h.npins == 0 || h.npins > NFTD_PINS_MAX ||
	    len != sizeof(h) + (size_t)h.npins * sizeof(struct nftd_wire_pin) || h.pad[0] ||
	    h.pad[1])
		return -EINVAL;
	size_t nl = strnlen(h.name, sizeof(h.name));
	if (nl == 0 || nl == sizeof(h.name))
		return -EINVAL;
	for (size_t i = nl; i < sizeof(h.name); i++)
		if (h.name[i])
			return -EINVAL;
	/* A name as the resolver has it: already in normal form. */
	char norm[NETRULE_NAME_MAX + 1];
	if (netname_normalize(h.name, norm, sizeof(norm)) || strcmp(norm, h.name))
		return -EINVAL;
	out->seq = h.seq;
	memcpy(out->name, h.name, sizeof(out->name));
	out->npins = h.npins;
	const uint8_t *p = (const uint8_t *)buf + sizeof(h);
	for (size_t i = 0; i < h.npins; i++) {
		struct nftd_wire_pin w;
		memcpy(&w, p + i * sizeof(w), sizeof(w));
		static const uint8_t zero[12];
		if (w.family != AF_INET || memcmp(w.addr + 4, zero, sizeof(zero)) ||
		    (w.proto != 6 && w.proto != 17) || w.port == 0 ||
		    w.timeout_s < NFTD_TIMEOUT_MIN || w.timeout_s > NFTD_TIMEOUT_MAX)
			return -EINVAL;
		struct nft_pin *q = &out->pins[i];
		memset(q, 0, sizeof(*q));
		q->addr.family = AF_INET;
		memcpy(q->addr.a, w.addr, 4);
		q->proto = w.proto;
		q->port = w.port;
		q->timeout_s = w.timeout_s;
	}
	return 0;
}

long nftd_msg_build(uint32_t seq, const char *name, const struct nft_pin *pins, size_t n, void *buf,
                    size_t cap)
{
	struct nftd_wire_hdr h;
	memset(&h, 0, sizeof(h));
	size_t nl = strlen(name);
	size_t len = sizeof(h) + n * sizeof(struct nftd_wire_pin);
	if (n == 0 || n > NFTD_PINS_MAX || nl == 0 || nl >= sizeof(h.name) || len > cap)
		return -EINVAL;
	h.type = NFTD_PIN;
	h.seq = seq;
	h.npins = (uint32_t)n;
	memcpy(h.name, name, nl);
	memcpy(buf, &h, sizeof(h));
	for (size_t i = 0; i < n; i++) {
		struct nftd_wire_pin w;
		memset(&w, 0, sizeof(w));
		w.family = (uint8_t)pins[i].addr.family;
		memcpy(w.addr, pins[i].addr.a, 4);
		w.proto = pins[i].proto;
		w.port = pins[i].port;
		w.timeout_s = pins[i].timeout_s;
		memcpy((uint8_t *)buf + sizeof(h) + i * sizeof(w), &w, sizeof(w));
	}
	return (long)len;
}

int nftd_pins_allowed(const struct netpolicy *policy, const struct netaddr *hosts, size_t nhosts,
                      const struct nftd_msg *m)
{
	if (policy->mode != NETPOLICY_RULES)
		return -EPERM;
	for (size_t i = 0; i < m->npins; i++) {
		const struct nft_pin *p = &m->pins[i];
		bool covered = false;
		for (size_t k = 0; !covered && k < policy->nallow; k++) {
			const struct netrule *r = &policy->allow[k];
			covered = r->has_port && netrule_match_name(r, m->name, p->port);
		}
		if (!covered || net_always_denied(&p->addr, hosts, nhosts))
			return -EPERM;
	}
	return 0;
}

/* ---- the parser's side ------------------------------------------------- */

int nftd_fork(struct egress *e)
{
	int rpc[2], push[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rpc))
		return -errno;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, push)) {
		int r = -errno;
		close(rpc[0]);
		close(rpc[1]);
		return r;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(rpc[0]);
		close(rpc[1]);
		close(push[0]);
		close(push[1]);
		return r;
	}
	if (pid == 0) {
		/* The keeper must not outlive the parser (when cove-egress is
		 * its pid namespace's init, the kernel sees to that as well). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != parent)
			_exit(1);
		/* Its own name in ps and pgrep: "cove-egress" stays one per
		 * sandbox, the process libcove tracks. */
		prctl(PR_SET_NAME, "cove-egress-nft", 0, 0, 0);
		close(rpc[0]);
		close(push[0]);
		e->keeper = true;
		e->nftd_rpc = rpc[1];
		e->nftd_push = push[1];
		return 0;
	}
	close(rpc[1]);
	close(push[1]);
	e->keeper = false;
	e->keeper_pid = pid;
	e->nftd_rpc = rpc[0];
	e->nftd_push = push[0];
	return pid;
}

int nftd_wait_ready(struct egress *e, char *err, size_t errlen)
{
	struct pollfd p = { .fd = e->nftd_rpc, .events = POLLIN };
	int k;
	do
		k = poll(&p, 1, NFTD_READY_MS);
	while (k < 0 && errno == EINTR);
	if (k == 0)
		return errf(err, errlen, -ETIMEDOUT, "nft keeper: not ready within %d ms",
		            NFTD_READY_MS);
	char line[400];
	ssize_t n = recv(e->nftd_rpc, line, sizeof(line) - 1, 0);
	if (n <= 0)
		return errf(err, errlen, -EPIPE, "nft keeper: exited before it was ready");
	line[n] = '\0';
	if (strcmp(line, "ok"))
		return errf(err, errlen, -EIO, "nft keeper: %s", line);
	return 0;
}

static void on_keeper_gone(struct ev *ev, uint32_t events)
{
	(void)events;
	struct egress *e = (struct egress *)((char *)ev - offsetof(struct egress, rpc_ev));
	fprintf(stderr, "cove-egress: the nft keeper is gone\n");
	e->keeper_gone = true;
	e->loop.stop = true;
}

/* A ctl request from the keeper: the line, and the client's connection as
 * the one descriptor it carries (anything else is closed). */
static void on_push(struct ev *ev, uint32_t events)
{
	(void)events;
	struct egress *e = (struct egress *)((char *)ev - offsetof(struct egress, push_ev));
	char *line = malloc(CTL_LINE_MAX);
	if (!line)
		return;
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = line, .iov_len = CTL_LINE_MAX };
	struct msghdr mh = { .msg_iov = &iov,
		             .msg_iovlen = 1,
		             .msg_control = u.buf,
		             .msg_controllen = sizeof(u.buf) };
	ssize_t n = recvmsg(ev->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
		free(line);
		return;
	}
	int fd = -1;
	for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd < 0)
				fd = f;
			else
				close(f);
		}
	}
	if (n <= 0) {
		if (fd >= 0)
			close(fd);
		free(line);
		on_keeper_gone(&e->rpc_ev, 0);
		return;
	}
	if (fd >= 0 && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		/* Refused (too many clients, no memory): the host reads EOF. */
		if (ctl_adopt(e, fd, line, (size_t)n))
			fprintf(stderr, "cove-egress: a ctl request dropped\n");
	} else if (fd >= 0) {
		close(fd);
	}
	explicit_bzero(line, (size_t)n);
	free(line);
}

int nftd_watch(struct egress *e)
{
	/* No events asked: EPOLLHUP alone says the keeper closed its end. */
	e->rpc_ev.fd = e->nftd_rpc;
	e->rpc_ev.fn = on_keeper_gone;
	int r = loop_add(&e->loop, &e->rpc_ev, 0);
	if (r)
		return r;
	e->push_ev.fd = e->nftd_push;
	e->push_ev.fn = on_push;
	return loop_add(&e->loop, &e->push_ev, EPOLLIN);
}

int nftd_pin(struct egress *e, const char *name, const struct nft_pin *pins, size_t n)
{
	static uint8_t buf[NFTD_MSG_MAX];
	uint32_t seq = ++e->nftd_seq;
	long len = nftd_msg_build(seq, name, pins, n, buf, sizeof(buf));
	if (len < 0)
		return (int)len;
	/* Never blocks: a keeper that stopped reading fails the pin. */
	ssize_t sent = send(e->nftd_rpc, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (sent != len)
		return sent < 0 && errno == EAGAIN ? -EAGAIN : -EPIPE;
	uint64_t end = loop_now_ms() + NFTD_REPLY_MS;
	for (;;) {
		uint64_t now = loop_now_ms();
		if (now >= end)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = e->nftd_rpc, .events = POLLIN };
		int k = poll(&p, 1, (int)(end - now));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k ? -errno : -ETIMEDOUT;
		struct nftd_wire_reply rep;
		ssize_t got = recv(e->nftd_rpc, &rep, sizeof(rep), MSG_DONTWAIT);
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (got <= 0) {
			on_keeper_gone(&e->rpc_ev, 0);
			return -EPIPE;
		}
		/* A late answer to a request that timed out: skip it. */
		if (got == (ssize_t)sizeof(rep) && rep.seq == seq)
			return rep.status > 0 || rep.status < -4095 ? -EIO : rep.status;
	}
}

/* ---- the keeper -------------------------------------------------------- */

int nftd_apply_pins(struct egress *e, const struct nftd_msg *m)
{
	struct nft_pin add[NFTD_PINS_MAX], repl[NFTD_PINS_MAX];
	size_t na = 0, nr = 0;
	uint64_t now = loop_now_ms();
	for (size_t i = 0; i < m->npins; i++) {
		int how = pins_note(&e->pins, &m->pins[i], m->name, now);
		if (how == 1)
			add[na++] = m->pins[i];
		else if (how == 2)
			repl[nr++] = m->pins[i];
	}
	char err[256];
	int ret = 0;
	if (na) {
		char *s = nftgen_pins(add, na, 0);
		ret = s ? enft_run(e->nft, s, err, sizeof(err)) : -ENOMEM;
		free(s);
	}
	if (!ret && nr) {
		/* delete + add refreshes the timeout; if the kernel already let one
		 * expire, the delete fails: add alone then. */
		char *s = nftgen_pins(repl, nr, 1);
		ret = s ? enft_run(e->nft, s, err, sizeof(err)) : -ENOMEM;
		free(s);
		if (ret) {
			s = nftgen_pins(repl, nr, 0);
			ret = s ? enft_run(e->nft, s, err, sizeof(err)) : -ENOMEM;
			free(s);
		}
	}
	if (ret)
		fprintf(stderr, "cove-egress (nft keeper): pins for %s: %s\n", m->name, err);
	return ret;
}

int nftd_forward(struct egress *e, const char *line, size_t len, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct iovec iov = { .iov_base = (void *)line, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov,
		             .msg_iovlen = 1,
		             .msg_control = u.buf,
		             .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	ssize_t n = sendmsg(e->nftd_push, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

/* A request from the parser: checked, then against the policy in force;
 * the status goes back whatever happens (a lost one times the parser's
 * wait out, it does not wedge it). */
static void on_rpc(struct ev *ev, uint32_t events)
{
	(void)events;
	struct egress *e = (struct egress *)((char *)ev - offsetof(struct egress, rpc_ev));
	static uint8_t buf[NFTD_MSG_MAX + 1];
	static struct nftd_msg m;
	/* Plain recv: descriptors the parser might attach are dropped. */
	ssize_t n = recv(ev->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		e->loop.stop = true; /* the parser is gone */
		return;
	}
	struct nftd_wire_reply rep = { 0, -EINVAL };
	if (nftd_msg_parse(buf, (size_t)n, &m) == 0) {
		rep.seq = m.seq;
		rep.status = nftd_pins_allowed(&e->policy, e->cfg.hosts, e->cfg.nhosts, &m);
		if (!rep.status)
			rep.status = nftd_apply_pins(e, &m);
	} else if ((size_t)n >= sizeof(struct nftd_wire_hdr)) {
		memcpy(&rep.seq, buf + offsetof(struct nftd_wire_hdr, seq), sizeof(rep.seq));
	}
	if (rep.status)
		fprintf(stderr, "cove-egress (nft keeper): a pin request refused: %s\n",
		        strerror(-rep.status));
	(void)send(ev->fd, &rep, sizeof(rep), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Send the ready line (or why not) to the parser. */
static void say(struct egress *e, const char *line)
{
	if (strcmp(line, "ok"))
		fprintf(stderr, "cove-egress (nft keeper): %s\n", line);
	(void)send(e->nftd_rpc, line, strlen(line), MSG_NOSIGNAL);
}

int nftd_main(struct egress *e, int seccomp_log)
{
	char err[512];
	/* The parser's descriptors: the inherited epoll instance is the
	 * parser's own (a change here would change its set); the log, the
	 * ready pipe and the publish listeners are the parser's to use. */
	close(e->loop.epfd);
	if (e->cfg.log_fd >= 0)
		close(e->cfg.log_fd);
	if (e->cfg.ready_fd >= 0)
		close(e->cfg.ready_fd);
	for (size_t i = 0; i < e->cfg.npublish; i++)
		close(e->cfg.publish[i].fd);
	e->cfg.log_fd = e->cfg.ready_fd = -1;
	e->cfg.npublish = 0;
	int r = loop_init(&e->loop);
	if (r) {
		snprintf(err, sizeof(err), "epoll: %s", strerror(-r));
		say(e, err);
		return 1;
	}
	e->rpc_ev.fd = e->nftd_rpc;
	e->rpc_ev.fn = on_rpc;
	if ((r = loop_add(&e->loop, &e->rpc_ev, EPOLLIN)) || (r = ctl_open(e))) {
		snprintf(err, sizeof(err), "ctl_fd: %s", strerror(-r));
		say(e, err);
		return 1;
	}
	if (confine(CONFINE_KEEPER, seccomp_log, err, sizeof(err))) {
		say(e, err);
		return 1;
	}
	say(e, "ok");
	r = loop_run(&e->loop);
	return r ? 1 : 0;
}
