/* The pairs between the nft keeper and the parser, and their wire
 * (egress/nftd.h). */
#include "nftd.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress.h"
#include "errf.h"

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

void nftd_gone(struct egress *e)
{
	fprintf(stderr, "cove-egress: the nft keeper is gone\n");
	e->keeper_gone = true;
	e->loop.stop = true;
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
			nftd_gone(e);
			return -EPIPE;
		}
		/* A late answer to a request that timed out: skip it. */
		if (got == (ssize_t)sizeof(rep) && rep.seq == seq)
			return rep.status > 0 || rep.status < -4095 ? -EIO : rep.status;
	}
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
