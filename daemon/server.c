/* coved's HTTP server: libmicrohttpd with a thread per connection (a
 * stalled client holds only its own thread) on a Unix socket and,
 * optionally, TCP.  Every request is counted against max_requests,
 * authenticated on its first call, its body bounded; envd requests go to
 * envd_handle whole. */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "coved_priv.h"
#include "envd.h"
#include "errf.h"

#define URL_MAX       2048
#define HEADER_MEMORY (64 * 1024) /* per connection: bounds the request head */

struct req {
	bool envd, counted, too_big;
	void *envd_cls;
	char *body;
	size_t len, cap;
};

static struct MHD_Daemon *unix_daemon, *tcp_daemon;
static int unix_fd = -1;

enum MHD_Result coved_json_reply(struct MHD_Connection *c, unsigned int status, json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	struct MHD_Response *r;
	if (text)
		r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	else
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	if (text)
		MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result too_many(struct MHD_Connection *c, json_t *msg);

/* msg as a JSON string: jansson refuses text that is not UTF-8 (a message
 * may quote a guest's or a log's bytes, or be cut inside a character), so
 * such a message goes with every byte above 0x7f made '?' rather than no
 * message at all. */
static json_t *message_string(const char *msg)
{
	json_t *s = json_string(msg ? msg : "");
	if (s)
		return s;
	char *ascii = strdup(msg);
	if (!ascii)
		return json_string("out of memory");
	for (unsigned char *p = (unsigned char *)ascii; *p; p++)
		if (*p > 0x7f)
			*p = '?';
	s = json_string(ascii);
	free(ascii);
	return s;
}

enum MHD_Result coved_json_error(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	json_t *m = message_string(msg);
	if (status == 429)
		return too_many(c, m);
	return coved_json_reply(c, status,
	                        json_pack("{s:i, s:o}", "code", (int)status, "message", m));
}

static enum MHD_Result too_many(struct MHD_Connection *c, json_t *msg)
{
	json_t *o = json_pack("{s:i, s:o}", "code", 429, "message", msg);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return MHD_NO;
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Retry-After", "1");
	enum MHD_Result ret = MHD_queue_response(c, 429, r);
	MHD_destroy_response(r);
	return ret;
}

static bool authorized(struct coved *d, struct MHD_Connection *c)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-KEY");
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (!key && auth && strncmp(auth, "Bearer ", 7) == 0)
		key = auth + 7;
	if (!key)
		return false;
	bool ok = false;
	/* Every key is compared, so the time does not tell which matched. */
	for (size_t i = 0; i < d->nkeys; i++)
		ok |= coved_secret_eq(key, d->keys[i]);
	return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
	(void)version;
	struct coved *d = cls;
	struct req *r = *req_cls;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*req_cls = r;
		if (atomic_fetch_add(&d->in_flight, 1) >= d->cfg.max_requests) {
			atomic_fetch_sub(&d->in_flight, 1);
			coved_metric_bump(d, &d->m.limit_requests);
			return coved_json_error(c, 429,
			                        "coved is answering its maximum of requests at "
			                        "once (max_requests)");
		}
		r->counted = true;
		if (strlen(url) > URL_MAX)
			return coved_json_error(c, 414, "request path too long");
		if (envd_route(c, url)) {
			r->envd = true;
			return envd_handle(d, c, url, method, upload_data, upload_data_size,
			                   &r->envd_cls);
		}
		bool open = strcmp(url, "/metrics") == 0 && !d->cfg.metrics_auth;
		if (!open && !authorized(d, c))
			return coved_json_error(c, 401, "missing or invalid API key (X-API-KEY)");
		return MHD_YES;
	}
	if (r->envd)
		return envd_handle(d, c, url, method, upload_data, upload_data_size, &r->envd_cls);
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (r->too_big || n > d->cfg.max_body - r->len) {
			r->too_big = true;
			return MHD_YES;
		}
		if (r->len + n > r->cap) {
			size_t cap = r->cap ? r->cap : 4096;
			while (cap < r->len + n)
				cap *= 2;
			char *b = realloc(r->body, cap);
			if (!b)
				return MHD_NO;
			r->body = b;
			r->cap = cap;
		}
		memcpy(r->body + r->len, upload_data, n);
		r->len += n;
		return MHD_YES;
	}
	if (r->too_big) {
		char msg[96];
		snprintf(msg, sizeof(msg), "request body over %zu bytes (max_body_bytes)",
		         d->cfg.max_body);
		return coved_json_error(c, 413, msg);
	}
	coved_metric_bump(d, &d->m.requests);
	return coved_route(d, c, method, url, r->body, r->len);
}

static void on_done(void *cls, struct MHD_Connection *c, void **req_cls,
                    enum MHD_RequestTerminationCode toe)
{
	(void)c;
	(void)toe;
	struct coved *d = cls;
	struct req *r = *req_cls;
	if (!r)
		return;
	if (r->envd)
		envd_request_done(d, &r->envd_cls);
	if (r->counted)
		atomic_fetch_sub(&d->in_flight, 1);
	free(r->body);
	free(r);
	*req_cls = NULL;
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	fputs("coved: libmicrohttpd: ", stderr);
	vfprintf(stderr, fmt, ap);
}

static struct MHD_Daemon *start(struct coved *d, int fd, const struct sockaddr *sa)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	if (fd >= 0)
		return MHD_start_daemon(
		    flags, 0, NULL, NULL, on_request, d, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,
		    MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_done, d,
		    MHD_OPTION_CONNECTION_TIMEOUT, d->cfg.conn_timeout_s,
		    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEADER_MEMORY,
		    MHD_OPTION_CONNECTION_LIMIT, d->cfg.max_requests + 64, MHD_OPTION_END);
	return MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, d, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,
	    MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_NOTIFY_COMPLETED, on_done, d,
	    MHD_OPTION_CONNECTION_TIMEOUT, d->cfg.conn_timeout_s,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HEADER_MEMORY, MHD_OPTION_CONNECTION_LIMIT,
	    d->cfg.max_requests + 64, MHD_OPTION_END);
}

static int listen_unix(struct coved *d, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(d->cfg.socket) >= sizeof(sa.sun_path))
		return errf(err, errlen, -ENAMETOOLONG, "socket path '%s' is too long",
		            d->cfg.socket);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d->cfg.socket);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errf(err, errlen, -errno, "socket: %s", strerror(errno));
	struct stat st;
	/* A stale socket from an earlier run; anything else stays. */
	if (lstat(sa.sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(sa.sun_path);
	mode_t old = umask(0117);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0) {
		r = errf(err, errlen, -errno, "cannot bind %s: %s", sa.sun_path, strerror(errno));
		close(fd);
		return r;
	}
	chmod(sa.sun_path, 0660);
	if (d->cfg.socket_group) {
		struct group *g = getgrnam(d->cfg.socket_group);
		if (g && chown(sa.sun_path, (uid_t)-1, g->gr_gid) < 0)
			fprintf(stderr, "coved: cannot give %s to group %s: %s\n", sa.sun_path,
			        d->cfg.socket_group, strerror(errno));
	}
	if (listen(fd, 256) < 0) {
		r = errf(err, errlen, -errno, "listen %s: %s", sa.sun_path, strerror(errno));
		close(fd);
		return r;
	}
	unix_fd = fd;
	return 0;
}

static int parse_tcp(const char *s, struct sockaddr_in *sa, char *err, size_t errlen)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return errf(err, errlen, -EINVAL, "tcp '%s' is not ADDR:PORT (IPv4)", s);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (*end || port == 0 || port > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return errf(err, errlen, -EINVAL, "tcp '%s' is not ADDR:PORT (IPv4)", s);
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

int coved_serve(struct coved *d, char *err, size_t errlen)
{
	int r = listen_unix(d, err, errlen);
	if (r < 0)
		return r;
	if (!(unix_daemon = start(d, unix_fd, NULL)))
		return errf(err, errlen, -EIO, "libmicrohttpd would not serve %s", d->cfg.socket);
	if (d->cfg.tcp) {
		struct sockaddr_in sa;
		if ((r = parse_tcp(d->cfg.tcp, &sa, err, errlen)) < 0)
			return r;
		if (!(tcp_daemon = start(d, -1, (struct sockaddr *)&sa)))
			return errf(err, errlen, -EADDRINUSE, "cannot listen on %s", d->cfg.tcp);
	}
	return 0;
}

void coved_unserve(struct coved *d)
{
	(void)d;
	if (tcp_daemon)
		MHD_stop_daemon(tcp_daemon);
	if (unix_daemon)
		MHD_stop_daemon(unix_daemon);
	tcp_daemon = unix_daemon = NULL;
	unix_fd = -1;
}
