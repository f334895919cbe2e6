/* Kept connections to the other nodes (fwd_pool.h).  Each handle owns a
 * small slot its socket callbacks write through: libcurl keeps a
 * connection's close callback and its pointer for the connection's whole
 * life, past the transfer that opened it, so the pointer must be the
 * handle's (freed after curl_easy_cleanup), never a forward's. */
#include "daemon/cluster/fwd_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/cluster/fwd_http.h"

struct fwd_conn {
	struct fwd_conn *next; /* in the idle list */
	CURL *easy;
	char *base;
	int64_t idle_since;
	pthread_mutex_t mu; /* guards sock and cancel against the callbacks */
	curl_socket_t sock; /* the transfer's socket, or CURL_SOCKET_BAD */
	bool cancel;
};

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fwd_conn *idle; /* most recently returned first */
static size_t n_idle, n_made, n_reused;

static curl_socket_t on_open(void *cls, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)purpose;
	struct fwd_conn *c = cls;
	pthread_mutex_lock(&c->mu);
	curl_socket_t s = CURL_SOCKET_BAD;
	if (!c->cancel)
		s = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
	if (s != CURL_SOCKET_BAD)
		c->sock = s;
	pthread_mutex_unlock(&c->mu);
	return s;
}

static int on_close(void *cls, curl_socket_t s)
{
	struct fwd_conn *c = cls;
	pthread_mutex_lock(&c->mu);
	if (c->sock == s)
		c->sock = CURL_SOCKET_BAD;
	int r = close(s); /* under mu: a cancel never shuts a reused fd number */
	pthread_mutex_unlock(&c->mu);
	return r;
}

/* Called once the connection (new or kept) is there, before the request. */
static int on_prereq(void *cls, char *ip, char *lip, int port, int lport)
{
	(void)ip, (void)lip, (void)port, (void)lport;
	struct fwd_conn *c = cls;
	curl_socket_t s = CURL_SOCKET_BAD;
	curl_easy_getinfo(c->easy, CURLINFO_ACTIVESOCKET, &s);
	pthread_mutex_lock(&c->mu);
	bool stop = c->cancel;
	if (s != CURL_SOCKET_BAD)
		c->sock = s;
	pthread_mutex_unlock(&c->mu);
	return stop ? CURL_PREREQFUNC_ABORT : CURL_PREREQFUNC_OK;
}

static void arm(struct fwd_conn *c)
{
	c->cancel = false;
	c->sock = CURL_SOCKET_BAD;
	curl_easy_setopt(c->easy, CURLOPT_OPENSOCKETFUNCTION, on_open);
	curl_easy_setopt(c->easy, CURLOPT_OPENSOCKETDATA, c);
	curl_easy_setopt(c->easy, CURLOPT_CLOSESOCKETFUNCTION, on_close);
	curl_easy_setopt(c->easy, CURLOPT_CLOSESOCKETDATA, c);
	curl_easy_setopt(c->easy, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(c->easy, CURLOPT_PREREQDATA, c);
}

static void conn_free(struct fwd_conn *c)
{
	if (c->easy)
		curl_easy_cleanup(c->easy); /* closes its connections: on_close */
	pthread_mutex_destroy(&c->mu);
	free(c->base);
	free(c);
}

/* take_idle() - the newest idle handle for base (pool_mu held); handles
 * idle past FWD_POOL_IDLE_MS are unlinked onto *old for closing. */
static struct fwd_conn *take_idle(const char *base, struct fwd_conn **old)
{
	int64_t now = mono_ms();
	struct fwd_conn *found = NULL, **pp = &idle;
	while (*pp) {
		struct fwd_conn *c = *pp;
		bool stale = now - c->idle_since > FWD_POOL_IDLE_MS;
		if (stale || (!found && strcmp(c->base, base) == 0)) {
			*pp = c->next;
			n_idle--;
			if (stale) {
				c->next = *old;
				*old = c;
			} else {
				found = c;
			}
			continue;
		}
		pp = &c->next;
	}
	return found;
}

static void free_list(struct fwd_conn *c)
{
	while (c) {
		struct fwd_conn *next = c->next;
		conn_free(c);
		c = next;
	}
}

struct fwd_conn *fwd_conn_get(const char *base)
{
	struct fwd_conn *old = NULL;
	pthread_mutex_lock(&pool_mu);
	struct fwd_conn *c = take_idle(base, &old);
	if (c)
		n_reused++;
	pthread_mutex_unlock(&pool_mu);
	free_list(old);
	if (c) {
		curl_easy_reset(c->easy); /* options only: its connection stays */
		c->next = NULL;
		arm(c);
		return c;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	fwd_curl_init();
	c->easy = curl_easy_init();
	c->base = strdup(base);
	if (!c->easy || !c->base) {
		conn_free(c);
		return NULL;
	}
	pthread_mutex_lock(&pool_mu);
	n_made++;
	pthread_mutex_unlock(&pool_mu);
	arm(c);
	return c;
}

CURL *fwd_conn_easy(struct fwd_conn *c)
{
	return c->easy;
}

void fwd_conn_cancel(struct fwd_conn *c)
{
	pthread_mutex_lock(&c->mu);
	c->cancel = true;
	if (c->sock != CURL_SOCKET_BAD)
		shutdown(c->sock, SHUT_RDWR);
	pthread_mutex_unlock(&c->mu);
}

void fwd_conn_put(struct fwd_conn *c, bool clean)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	clean = clean && !c->cancel;
	c->sock = CURL_SOCKET_BAD;
	pthread_mutex_unlock(&c->mu);
	if (clean) {
		size_t same = 0;
		pthread_mutex_lock(&pool_mu);
		for (struct fwd_conn *i = idle; i; i = i->next)
			same += strcmp(i->base, c->base) == 0;
		if (same < FWD_POOL_PER_NODE && n_idle < FWD_POOL_MAX) {
			c->idle_since = mono_ms();
			c->next = idle;
			idle = c;
			n_idle++;
			c = NULL;
		}
		pthread_mutex_unlock(&pool_mu);
	}
	if (c)
		conn_free(c);
}

void fwd_pool_stats(size_t *made, size_t *reused)
{
	pthread_mutex_lock(&pool_mu);
	*made = n_made;
	*reused = n_reused;
	pthread_mutex_unlock(&pool_mu);
}

void fwd_pool_flush(void)
{
	pthread_mutex_lock(&pool_mu);
	struct fwd_conn *all = idle;
	idle = NULL;
	n_idle = 0;
	pthread_mutex_unlock(&pool_mu);
	free_list(all);
}
