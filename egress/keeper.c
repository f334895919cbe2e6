/* The loops on either end of the nft keeper's pairs (egress/keeper.h):
 * the keeper's own, and the parser's watch on it. */
#include "keeper.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confine.h"
#include "ctl.h"
#include "nft.h"
#include "nftd.h"

/* ---- the parser's side ------------------------------------------------- */

static void on_keeper_gone(struct ev *ev, uint32_t events)
{
	(void)events;
	nftd_gone((struct egress *)((char *)ev - offsetof(struct egress, rpc_ev)));
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
		nftd_gone(e);
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

int keeper_watch(struct egress *e)
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

/* ---- the keeper -------------------------------------------------------- */

int keeper_apply_pins(struct egress *e, const struct nftd_msg *m)
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
			rep.status = keeper_apply_pins(e, &m);
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

int keeper_main(struct egress *e, int seccomp_log)
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
