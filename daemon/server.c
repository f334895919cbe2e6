/* coved's HTTP server: libmicrohttpd with a thread per connection (a
 * stalled client holds only its own thread) on a Unix socket and,
 * optionally, TCP (with TLS when the config names a certificate, and a
 * limit of connections per client address).  A connection has
 * header_timeout_s of silence before its request head is in, then
 * connection_timeout_s.  Every request is counted against max_requests,
 * authenticated on its first call (the key gives its tenant, which goes
 * with the request to coved_route), its body bounded; envd requests go to
 * envd_handle whole (they authenticate with the sandbox's own token), and
 * requests for a sandbox's port (E2b-Sandbox-Port, or a host name under
 * the config's domain) to ports_handle, streamed both ways. */
#include "daemon/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/api/console.h"
#include "daemon/api/routes.h"
#include "daemon/api/uploads.h"
#include "daemon/cluster/cluster.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/route.h"
#include "daemon/conf/keys.h"
#include "daemon/envd/envd.h"
#include "daemon/http/reply.h"
#include "daemon/ports/ports.h"
#include "daemon/sandboxes/metrics.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/trace/tracer.h"
#include "errf.h"
#include "io.h"

#define URL_MAX       2048
#define HEADER_MEMORY (64 * 1024) /* per connection: bounds the request head */

#define TLS_PEM_MAX (256 * 1024)

struct req {
	bool envd, counted, too_big;
	bool upload; /* a COPY archive (api/uploads.h), streamed */
	void *upload_cls;
	bool admin; /* /cluster on the Unix socket (cluster/route.h) */
	bool port;  /* a sandbox's port (daemon/ports) */
	struct ports_route rt;
	void *port_cls;
	char port_text[8];
	struct fwd *fwd;             /* forwarded to the sandbox's node */
	struct coved_tenant *tenant; /* from the API key; NULL for an open /metrics */
	void *envd_cls;
	char *body;
	size_t len, cap;
};

static struct MHD_Daemon *unix_daemon, *tcp_daemon;
/* The request target as the client sent it (libmicrohttpd hands the
 * handler a decoded path): kept by on_uri for the same connection's
 * thread, which runs the request's first call next. */
static __thread char raw_target[RELAY_TARGET_MAX + 1];
static __thread bool raw_target_long;
static int unix_fd = -1;
static char *tls_cert_pem, *tls_key_pem;

/* key_lookup() - the tenant of API key @key, or NULL.  Every key is
 * compared and the match is picked without a branch, so the time does not
 * tell which key (or whether any) matched. */
static struct coved_tenant *key_lookup(struct coved *d, const char *key)
{
	uintptr_t found = 0;
	for (size_t i = 0; i < d->nkeys; i++) {
		uintptr_t mask = -(uintptr_t)coved_secret_eq(key, d->keys[i].key);
		found = (found & ~mask) | ((uintptr_t)d->keys[i].t & mask);
	}
	return (struct coved_tenant *)found;
}

/* authorized() - the tenant of the request's API key (X-API-Key, or a
 * Bearer token), or NULL. */
static struct coved_tenant *authorized(struct coved *d, struct MHD_Connection *c)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-KEY");
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (!key && auth && strncmp(auth, "Bearer ", 7) == 0)
		key = auth + 7;
	return key ? key_lookup(d, key) : NULL;
}

/* trace_begin() - the request's traceparent and tracestate, for the
 * journal lines this thread writes until on_done (daemon/trace/tracer.h):
 * @tenant's (NULL: an envd request, its token names the sandbox). */
static void trace_begin(struct MHD_Connection *c, const char *tenant)
{
	trace_req_begin(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "traceparent"),
	                MHD_lookup_connection_value(c, MHD_HEADER_KIND, "tracestate"), tenant);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	(void)cls;
	(void)c;
	raw_target_long = strlen(uri) > RELAY_TARGET_MAX;
	snprintf(raw_target, sizeof(raw_target), "%s", raw_target_long ? "" : uri);
	return NULL;
}

/* key_tenant() - the tenant of an X-API-Key (a port request's only API
 * key header: its Authorization is the sandbox server's); *sent: one was. */
static struct coved_tenant *key_tenant(struct coved *d, struct MHD_Connection *c, bool *sent)
{
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-API-KEY");
	*sent = key != NULL;
	return key ? key_lookup(d, key) : NULL;
}

/* port_first() - a port request's first call: here, or forwarded to the
 * node that owns the sandbox (cluster mode; an upgrade is not forwarded). */
static enum MHD_Result port_first(struct coved *d, struct req *r, struct MHD_Connection *c,
                                  const char *method, const char *url, const char *upload_data,
                                  size_t *upload_data_size)
{
	if (raw_target_long)
		return coved_json_error(c, 414, "request target too long");
	/* A stream may wait on the guest up to port_idle_timeout_s between
	 * pieces: libmicrohttpd's own idle limit must not be shorter. */
	if (d->cfg.port_idle_s > d->cfg.conn_timeout_s)
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, d->cfg.port_idle_s);
	enum MHD_Result ret;
	bool up = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Upgrade") != NULL;
	if (d->cluster && up) {
		struct coved_sb *sb = coved_sb_find(d, r->rt.id);
		if (!sb) {
			char msg[300];
			snprintf(msg, sizeof(msg),
			         "sandbox %s is not on this node, and upgraded connections "
			         "(websockets) are not forwarded between nodes",
			         r->rt.id);
			return coved_json_error(c, 501, msg);
		}
		coved_sb_unref(sb);
	} else if (coved_cluster_intercept(d, c, method, url, true, NULL, &r->fwd, &ret)) {
		return r->fwd ? MHD_YES : ret;
	}
	r->port = true;
	bool sent;
	struct coved_tenant *t = key_tenant(d, c, &sent);
	return ports_handle(d, &r->rt, raw_target, t, sent, c, method, upload_data,
	                    upload_data_size, &r->port_cls);
}

static bool on_unix_socket(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_DAEMON);
	return i && i->daemon == unix_daemon;
}

/* GET /health without a sandbox (cluster mode): 200 while the node holds
 * its lease, 503 when it is fenced, so a load balancer takes it out. */
static enum MHD_Result cluster_health(struct coved *d, struct MHD_Connection *c)
{
	json_t *h = coved_cluster_health(d);
	bool ok = h && strcmp(json_string_value(json_object_get(h, "lease")), "ok") == 0;
	return coved_json_reply(c, ok ? 200 : 503, json_pack("{s:o*}", "cluster", h));
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
		/* The head is in: from here the longer idle limit holds. */
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, d->cfg.conn_timeout_s);
		char msg[300];
		int st = ports_route(d, c, &r->rt, msg, sizeof(msg));
		if (st)
			return coved_json_error(c, (unsigned)st, msg);
		/* A sandbox named by the host name is told to what follows (envd,
		 * a forward to its node) as E2b-Sandbox-Id and E2b-Sandbox-Port. */
		if (r->rt.by_host) {
			snprintf(r->port_text, sizeof(r->port_text), "%u", r->rt.port);
			if (!MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id"))
				MHD_set_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id",
				                         r->rt.id);
			if (!MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port"))
				MHD_set_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Port",
				                         r->port_text);
		}
		if (r->rt.kind == PORTS_FORWARD)
			return port_first(d, r, c, method, url, upload_data, upload_data_size);
		if (strlen(url) > URL_MAX)
			return coved_json_error(c, 414, "request path too long");
		/* The console's files hold no key and need none (api/console.h). */
		if (coved_console_route(method, url))
			return coved_console_reply(c, url);
		enum MHD_Result ret;
		if (d->cluster && strcmp(url, "/health") == 0 &&
		    !MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id"))
			return cluster_health(d, c);
		bool by_token;
		if (coved_upload_route(method, url, &by_token)) {
			r->upload = true;
			r->tenant = by_token ? NULL : authorized(d, c);
			return coved_upload_handle(d, r->tenant, c, url, upload_data,
			                           upload_data_size, &r->upload_cls);
		}
		if (envd_route(c, url)) {
			if (coved_cluster_intercept(d, c, method, url, true, NULL, &r->fwd, &ret))
				return r->fwd ? MHD_YES : ret;
			r->envd = true;
			trace_begin(c, NULL);
			return envd_handle(d, c, url, method, upload_data, upload_data_size,
			                   &r->envd_cls);
		}
		bool open = strcmp(url, "/metrics") == 0 && !d->cfg.metrics_auth;
		r->tenant = authorized(d, c);
		if (!r->tenant)
			r->tenant = coved_cluster_node_tenant(d, c);
		if (!open && !r->tenant)
			return coved_json_error(c, 401, "missing or invalid API key (X-API-KEY)");
		trace_begin(c, r->tenant ? r->tenant->name : "/"); /* "/": no tenant's */
		r->admin = strncmp(url, "/cluster", 8) == 0 && (!url[8] || url[8] == '/') &&
		           on_unix_socket(c);
		if (!r->admin &&
		    coved_cluster_intercept(d, c, method, url, false, r->tenant, &r->fwd, &ret))
			return r->fwd ? MHD_YES : ret;
		return MHD_YES;
	}
	if (r->fwd)
		return fwd_feed(r->fwd, c, upload_data, upload_data_size);
	if (r->port)
		return ports_handle(d, &r->rt, NULL, NULL, false, c, method, upload_data,
		                    upload_data_size, &r->port_cls);
	if (r->upload)
		return coved_upload_handle(d, r->tenant, c, url, upload_data, upload_data_size,
		                           &r->upload_cls);
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
	if (r->admin)
		return coved_cluster_admin(d, c, method, url, r->body, r->len);
	return coved_route(d, r->tenant, c, method, url, r->body, r->len);
}

static void on_done(void *cls, struct MHD_Connection *c, void **req_cls,
                    enum MHD_RequestTerminationCode toe)
{
	struct coved *d = cls;
	struct req *r = *req_cls;
	if (!r)
		return;
	if (r->envd)
		envd_request_done(d, &r->envd_cls);
	if (r->port)
		ports_request_done(&r->port_cls);
	if (r->fwd)
		fwd_close(r->fwd);
	if (r->upload)
		coved_upload_done(&r->upload_cls);
	if (r->counted)
		atomic_fetch_sub(&d->in_flight, 1);
	trace_req_end();
	/* A kept-alive connection waits for its next head: the short limit. */
	if (c && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
		                          d->cfg.header_timeout_s);
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

/* start() - one libmicrohttpd daemon: on fd (the Unix socket) or, with
 * fd < 0, on sa (TCP, with TLS and a per-address limit). */
static struct MHD_Daemon *start(struct coved *d, int fd, const struct sockaddr *sa)
{
	unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	if (MHD_is_feature_supported(MHD_FEATURE_UPGRADE) == MHD_YES)
		flags |= MHD_ALLOW_UPGRADE; /* websockets to sandboxes' ports */
	struct MHD_OptionItem o[12];
	size_t n = 0;
#define OPT(opt, val, ptr) (o[n++] = (struct MHD_OptionItem){ (opt), (intptr_t)(val), (ptr) })
	OPT(MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)log_mhd, NULL);
	OPT(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_done, d);
	OPT(MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, NULL);
	OPT(MHD_OPTION_CONNECTION_TIMEOUT, d->cfg.header_timeout_s, NULL);
	OPT(MHD_OPTION_CONNECTION_MEMORY_LIMIT, HEADER_MEMORY, NULL);
	OPT(MHD_OPTION_CONNECTION_LIMIT, d->cfg.max_requests + 64, NULL);
	if (fd >= 0) {
		OPT(MHD_OPTION_LISTEN_SOCKET, fd, NULL);
	} else {
		OPT(MHD_OPTION_SOCK_ADDR, 0, (void *)sa);
		OPT(MHD_OPTION_PER_IP_CONNECTION_LIMIT, d->cfg.max_connections_per_ip, NULL);
		if (tls_cert_pem) {
			flags |= MHD_USE_TLS;
			OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, tls_cert_pem);
			OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, tls_key_pem);
		}
	}
	OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, d, MHD_OPTION_ARRAY, o,
	                        MHD_OPTION_END);
}

/* read_pem() - a PEM file into memory (malloc'ed, NUL-ended), checked for
 * marker: a private key file must be the owner's alone. */
static int read_pem(const char *what, const char *path, const char *marker, bool secret, char **out,
                    char *err, size_t errlen)
{
	struct stat st;
	size_t len = 0;
	int e;
	char *buf = file_slurp(path, TLS_PEM_MAX, &len, &st, &e);
	int r = 0;
	*out = NULL;
	if (!buf)
		return e == EFBIG ? errf(err, errlen, -EINVAL, "%s %s is over %d bytes", what, path,
		                         TLS_PEM_MAX)
		       : e == EINVAL
		           ? errf(err, errlen, -EINVAL, "%s %s is not a regular file", what, path)
		           : errf(err, errlen, -e, "%s %s: %s", what, path, strerror(e));
	if (secret && (st.st_mode & 077))
		r = errf(err, errlen, -EPERM,
		         "%s %s is readable by others (mode %03o): chmod 600 it", what, path,
		         (unsigned)(st.st_mode & 0777));
	else if (!strstr(buf, marker))
		r = errf(err, errlen, -EINVAL, "%s %s holds no PEM '%s' block", what, path, marker);
	if (r < 0) {
		explicit_bzero(buf, len);
		free(buf);
		return r;
	}
	*out = buf;
	return 0;
}

static int tls_load(struct coved *d, char *err, size_t errlen)
{
	if (!d->cfg.tls_cert)
		return 0;
	if (!MHD_is_feature_supported(MHD_FEATURE_TLS))
		return errf(err, errlen, -ENOTSUP,
		            "tls_cert is set but this libmicrohttpd has no TLS support");
	int r = read_pem("tls_cert", d->cfg.tls_cert, "-----BEGIN CERTIFICATE-----", false,
	                 &tls_cert_pem, err, errlen);
	if (r == 0)
		r = read_pem("tls_key", d->cfg.tls_key, "PRIVATE KEY-----", true, &tls_key_pem, err,
		             errlen);
	if (r < 0)
		return r;
	/* Said here in one line, rather than as GnuTLS's words at start. */
	BIO *cb = BIO_new_mem_buf(tls_cert_pem, -1), *kb = BIO_new_mem_buf(tls_key_pem, -1);
	X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
	EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
	if (!x)
		r = errf(err, errlen, -EINVAL, "tls_cert %s: not a PEM certificate",
		         d->cfg.tls_cert);
	else if (!k)
		r = errf(err, errlen, -EINVAL, "tls_key %s: not a PEM private key (unencrypted)",
		         d->cfg.tls_key);
	else if (X509_check_private_key(x, k) != 1)
		r = errf(err, errlen, -EINVAL, "tls_key %s is not the key of tls_cert %s",
		         d->cfg.tls_key, d->cfg.tls_cert);
	X509_free(x);
	EVP_PKEY_free(k);
	BIO_free(cb);
	BIO_free(kb);
	ERR_clear_error();
	return r;
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
	struct sockaddr_in sa;
	int r;
	/* A bad address or certificate stops coved before it binds anything. */
	if (d->cfg.tcp && ((r = parse_tcp(d->cfg.tcp, &sa, err, errlen)) < 0 ||
	                   (r = tls_load(d, err, errlen)) < 0))
		return r;
	if (!d->cfg.tcp && d->cfg.tls_cert)
		return errf(err, errlen, -EINVAL,
		            "tls_cert is set but there is no \"tcp\" listener");
	if ((r = ports_init(d)) < 0)
		return errf(err, errlen, r, "cannot set up the ports' relays: %s", strerror(-r));
	if ((r = listen_unix(d, err, errlen)) < 0)
		return r;
	if (!(unix_daemon = start(d, unix_fd, NULL)))
		return errf(err, errlen, -EIO, "libmicrohttpd would not serve %s", d->cfg.socket);
	if (d->cfg.tcp) {
		if (!(tcp_daemon = start(d, -1, (struct sockaddr *)&sa)))
			return errf(err, errlen, -EADDRINUSE, "cannot listen on %s%s", d->cfg.tcp,
			            tls_cert_pem ? " with TLS (libmicrohttpd's line above says why)"
			                         : "");
	}
	return 0;
}

void coved_unserve(struct coved *d)
{
	(void)d;
	ports_stop(); /* upgraded streams let go of their connections first */
	if (tcp_daemon)
		MHD_stop_daemon(tcp_daemon);
	if (unix_daemon)
		MHD_stop_daemon(unix_daemon);
	tcp_daemon = unix_daemon = NULL;
	unix_fd = -1;
	if (tls_key_pem)
		explicit_bzero(tls_key_pem, strlen(tls_key_pem));
	free(tls_key_pem);
	free(tls_cert_pem);
	tls_key_pem = tls_cert_pem = NULL;
}
