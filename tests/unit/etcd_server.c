/* A real etcd for the unit tests (etcd_server.h). */
#include "etcd_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"

int unit_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;
	if (fd < 0)
		return 0;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* Whether GET /health on port answers {"health":"true"} within ms. */
static bool healthy(int port, int ms)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		                 .sin_port = htons((uint16_t)port),
		                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char buf[2048];
	size_t len = 0;
	bool ok = false;
	if (fd < 0)
		return false;
	static const char req[] = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
	struct timeval tv = { .tv_sec = 0, .tv_usec = ms * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1) {
		ssize_t n;
		while (len < sizeof(buf) - 1 &&
		       (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
			len += (size_t)n;
		buf[len] = '\0';
		ok = strstr(buf, "\"health\":\"true\"") != NULL;
	}
	close(fd);
	return ok;
}

/* The last line of etcd's log, for a reason. */
static void log_tail(const struct unit_etcd *u, char *out, size_t outlen)
{
	char path[96], buf[4096];
	snprintf(path, sizeof(path), "%s/etcd.log", u->dir);
	FILE *f = fopen(path, "r");
	out[0] = '\0';
	if (!f)
		return;
	while (fgets(buf, sizeof(buf), f)) {
		size_t n = strnlen(buf, outlen - 1);
		if (buf[0] != '\n') {
			memcpy(out, buf, n);
			out[n] = '\0';
		}
	}
	fclose(f);
	out[strcspn(out, "\n")] = '\0';
}

static void run_etcd(const struct unit_etcd *u, int peer)
{
	char log[96], purl[64], cluster[96];
	snprintf(log, sizeof(log), "%s/etcd.log", u->dir);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", peer);
	snprintf(cluster, sizeof(cluster), "unit=%s", purl);
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	execl(UNIT_ETCD_BIN, "etcd", "--name", "unit", "--data-dir", u->dir, "--listen-client-urls",
	      u->url, "--advertise-client-urls", u->url, "--listen-peer-urls", purl,
	      "--initial-advertise-peer-urls", purl, "--initial-cluster", cluster,
	      "--initial-cluster-state", "new", (char *)NULL);
	_exit(127);
}

bool unit_etcd_start(struct unit_etcd *u, int timeout_ms)
{
	memset(u, 0, sizeof(*u));
	if (access(UNIT_ETCD_BIN, X_OK)) {
		snprintf(u->why, sizeof(u->why),
		         "%s is not installed (Debian etcd-server): run scripts/install-deps",
		         UNIT_ETCD_BIN);
		return false;
	}
	snprintf(u->dir, sizeof(u->dir), "/tmp/cove-etcd.XXXXXX");
	int port = unit_free_port(), peer = unit_free_port();
	if (!mkdtemp(u->dir) || !port || !peer || port == peer) {
		snprintf(u->why, sizeof(u->why), "no data folder or free ports: %s",
		         strerror(errno));
		u->dir[0] = '\0';
		return false;
	}
	snprintf(u->url, sizeof(u->url), "http://127.0.0.1:%d", port);
	u->pid = fork();
	if (u->pid == 0)
		run_etcd(u, peer);
	if (u->pid < 0) {
		snprintf(u->why, sizeof(u->why), "fork: %s", strerror(errno));
		unit_etcd_stop(u);
		return false;
	}
	int64_t deadline = mono_ms() + timeout_ms;
	while (mono_ms() < deadline) {
		int st;
		if (waitpid(u->pid, &st, WNOHANG) == u->pid) {
			char tail[384];
			log_tail(u, tail, sizeof(tail));
			snprintf(u->why, sizeof(u->why), "etcd exited (status 0x%x): %s", st, tail);
			u->pid = 0;
			unit_etcd_stop(u);
			return false;
		}
		if (healthy(port, 200))
			return true;
		usleep(50 * 1000);
	}
	snprintf(u->why, sizeof(u->why), "etcd at %s not healthy within %d ms", u->url, timeout_ms);
	unit_etcd_stop(u);
	return false;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void unit_etcd_stop(struct unit_etcd *u)
{
	if (u->pid > 0) {
		kill(u->pid, SIGTERM);
		int64_t deadline = mono_ms() + 5000;
		while (waitpid(u->pid, NULL, WNOHANG) == 0) {
			if (mono_ms() > deadline) {
				kill(u->pid, SIGKILL);
				waitpid(u->pid, NULL, 0);
				break;
			}
			usleep(20 * 1000);
		}
		u->pid = 0;
	}
	if (u->dir[0])
		nftw(u->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	u->dir[0] = '\0';
}

struct unit_canned {
	int fd;
	const struct unit_reply *replies;
	size_t n, sent;
	atomic_bool stop;
	pthread_t thread;
};

/* Reads one request head and its Content-Length body (bounded). */
static void read_request(int fd)
{
	char buf[65536];
	size_t len = 0;
	ssize_t r;
	while (len < sizeof(buf) - 1 && (r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0) {
		len += (size_t)r;
		buf[len] = '\0';
		char *end = strstr(buf, "\r\n\r\n"), *cl = strcasestr(buf, "content-length:");
		if (end && (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0) <= len)
			return;
	}
}

static void serve(int fd, const struct unit_reply *rp)
{
	char head[256], cl[48] = "", fill[65536];
	size_t blen = rp->body ? strlen(rp->body) : rp->length;
	if (blen)
		snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", blen);
	int hl = snprintf(head, sizeof(head),
	                  "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n%s"
	                  "Connection: close\r\n\r\n",
	                  rp->status, cl);
	read_request(fd);
	if (send(fd, head, (size_t)hl, MSG_NOSIGNAL) != hl)
		return;
	if (rp->body) {
		send(fd, rp->body, blen, MSG_NOSIGNAL);
		return;
	}
	memset(fill, ' ', sizeof(fill));
	while (send(fd, fill, sizeof(fill), MSG_NOSIGNAL) > 0)
		;
}

static void *canned_main(void *arg)
{
	struct unit_canned *c = arg;
	int64_t deadline = mono_ms() + 5000;
	while (c->sent < c->n && !atomic_load(&c->stop) && mono_ms() < deadline) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		int s = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
		if (s < 0)
			continue;
		struct timeval tv = { .tv_sec = 2 };
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		serve(s, &c->replies[c->sent++]);
		close(s);
		deadline = mono_ms() + 5000;
	}
	return NULL;
}

struct unit_canned *unit_canned_start(const struct unit_reply *replies, size_t n, char *url,
                                      size_t urllen)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct unit_canned *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->replies = replies;
	c->n = n;
	atomic_init(&c->stop, false);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(c->fd, (struct sockaddr *)&a, &alen) || listen(c->fd, 8) ||
	    pthread_create(&c->thread, NULL, canned_main, c)) {
		if (c->fd >= 0)
			close(c->fd);
		free(c);
		return NULL;
	}
	snprintf(url, urllen, "http://127.0.0.1:%d", ntohs(a.sin_port));
	return c;
}

size_t unit_canned_stop(struct unit_canned *c)
{
	atomic_store(&c->stop, true);
	pthread_join(c->thread, NULL);
	close(c->fd);
	size_t sent = c->sent;
	free(c);
	return sent;
}
