/* A real etcd for the unit tests: /usr/bin/etcd (Debian's etcd-server,
 * which scripts/install-deps installs) on free loopback ports, its data in
 * a fresh temporary folder, stopped and removed again.  No Check
 * assertions here: a test fixture keeps the reason and the tests fail with
 * it. */
#ifndef COVE_UNIT_ETCD_SERVER_H
#define COVE_UNIT_ETCD_SERVER_H

#include <stdbool.h>
#include <sys/types.h>

#define UNIT_ETCD_BIN "/usr/bin/etcd"

struct unit_etcd {
	pid_t pid;
	char dir[64];  /* data folder (and etcd.log), "" when none */
	char url[64];  /* "http://127.0.0.1:PORT", the client endpoint */
	char why[512]; /* why it did not start */
};

/* unit_free_port() - a loopback TCP port nothing listens on now (0 on
 * failure).  Another program may take it before the caller does. */
int unit_free_port(void);

/* unit_etcd_start() - starts etcd and waits (at most timeout_ms) until its
 * /health answers true.  Return: true, or false with u->why filled and
 * nothing left running. */
bool unit_etcd_start(struct unit_etcd *u, int timeout_ms);

/* unit_etcd_stop() - SIGTERM, then SIGKILL after 5 s; removes the data
 * folder.  Safe on a stopped or never started u. */
void unit_etcd_stop(struct unit_etcd *u);

/* A fake gateway: a loopback HTTP server (in a thread) that answers its
 * connections in turn with replies[0..n), one each, then closes them.  A
 * body of NULL is endless (until the client hangs up), announced as length
 * bytes (0: no Content-Length).  Each wait is bounded (5 s). */
struct unit_reply {
	int status;
	const char *body;
	size_t length;
};
struct unit_canned;
/* unit_canned_start() - listens; *url: its "http://127.0.0.1:PORT".  The
 * replies must outlive it.  Return: the server, or NULL. */
struct unit_canned *unit_canned_start(const struct unit_reply *replies, size_t n, char *url,
                                      size_t urllen);
/* unit_canned_stop() - ends the thread; how many replies it sent. */
size_t unit_canned_stop(struct unit_canned *c);

#endif
