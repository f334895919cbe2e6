/* The HTTP pieces of a forward (fwd_http.h). */
#include "daemon/cluster/fwd_http.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errf.h"

/* Headers that belong to one connection, or that curl writes itself. */
static const char *const hop_by_hop[] = {
	"Connection", "Keep-Alive", "Transfer-Encoding", "TE",
	"Trailer",    "Upgrade",    "Content-Length",    "Host",
	"Expect",     NULL,
};

/* Set by the forwarding node alone: a client's are dropped. */
static const char *const node_only[] = { "X-Cove-Node-Auth", "X-Cove-Tenant", "X-Cove-Placed",
	                                 NULL };

bool fwd_name_is(const char *name, size_t nlen, const char *lit)
{
	return strlen(lit) == nlen && strncasecmp(name, lit, nlen) == 0;
}

static bool name_in(const char *name, size_t nlen, const char *const *list)
{
	for (; *list; list++)
		if (fwd_name_is(name, nlen, *list))
			return true;
	return false;
}

static bool hop(const char *name, size_t nlen)
{
	return name_in(name, nlen, hop_by_hop) ||
	       (nlen >= 6 && strncasecmp(name, "Proxy-", 6) == 0);
}

bool fwd_pass_back(const char *name)
{
	size_t n = strlen(name);
	return !hop(name, n) && !fwd_name_is(name, n, "Date");
}

int fwd_check_target(const struct fwd_target *t, char *err, size_t errlen)
{
	if (!t || !t->base)
		return errf(err, errlen, -EINVAL, "forward: no target node");
	size_t n = strlen(t->base);
	bool scheme = strncmp(t->base, "http://", 7) == 0 || strncmp(t->base, "https://", 8) == 0;
	for (size_t i = 0; scheme && i < n; i++)
		if ((unsigned char)t->base[i] <= ' ' || t->base[i] == 0x7f)
			scheme = false;
	if (!scheme || n > 1024)
		return errf(err, errlen, -EINVAL, "forward: node URL '%.64s' is not http(s)://",
		            t->base);
	if (!t->connect_timeout_ms || !t->idle_timeout_ms)
		return errf(err, errlen, -EINVAL, "forward to %s: a timeout of 0", t->base);
	return 0;
}

long fwd_parse_status(const char *s, size_t n)
{
	if (n < 3 || (n > 3 && s[3] != ' '))
		return -1;
	long v = 0;
	for (int i = 0; i < 3; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v >= 100 ? v : -1;
}

int64_t fwd_parse_length(const char *s)
{
	int64_t v = 0;
	size_t i = 0;
	for (; s[i]; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 18)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return i ? v : -1;
}

/* ---- the URL ------------------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (n > FWD_URL_MAX - b->len) {
		b->err = -EINVAL;
		return;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* sb_encode() - s, its bytes outside the unreserved ones and keep
 * percent-encoded. */
static void sb_encode(struct sbuf *b, const char *s, const char *keep)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		             (*p >= '0' && *p <= '9') || strchr("-._~", *p) ||
		             (keep && strchr(keep, *p));
		char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
		if (plain)
			sb_put(b, (const char *)p, 1);
		else
			sb_put(b, e, 3);
	}
}

struct query {
	struct sbuf *b;
	bool first;
	const char *skip;
};

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
	(void)kind;
	struct query *q = cls;
	if (q->skip && strcmp(key, q->skip) == 0)
		return MHD_YES;
	sb_put(q->b, q->first ? "?" : "&", 1);
	q->first = false;
	sb_encode(q->b, key, NULL);
	if (value) {
		sb_put(q->b, "=", 1);
		sb_encode(q->b, value, NULL);
	}
	return MHD_YES;
}

int fwd_request_url(struct MHD_Connection *c, const char *base, const char *path, const char *skip,
                    char **out)
{
	struct sbuf b = { 0 };
	size_t n = strlen(base);
	while (n && base[n - 1] == '/')
		n--;
	*out = NULL;
	if (path[0] != '/')
		return -EINVAL;
	sb_put(&b, base, n);
	sb_encode(&b, path, "/!$&'()*+,;=:@");
	struct query q = { &b, true, skip };
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &q);
	if (b.err) {
		free(b.p);
		return b.err;
	}
	*out = b.p;
	return 0;
}

/* ---- the headers --------------------------------------------------------- */

struct hdrs {
	struct curl_slist *l;
	const struct fwd_target *t;
	const char *conn; /* the client's Connection: the names it lists go no further */
	bool accept, ctype;
	int err;
};

/* in_list() - whether name is one of the comma-separated tokens of list. */
static bool in_list(const char *list, const char *name, size_t nlen)
{
	while (list && *list) {
		list += strspn(list, " \t,");
		size_t k = strcspn(list, " \t,");
		if (k && k == nlen && strncasecmp(list, name, nlen) == 0)
			return true;
		list += k;
	}
	return false;
}

static bool set_by_target(const struct fwd_target *t, const char *name, size_t nlen)
{
	for (const char *const *h = t->headers; h && *h; h++) {
		const char *colon = strchr(*h, ':');
		if (colon && (size_t)(colon - *h) == nlen && strncasecmp(*h, name, nlen) == 0)
			return true;
	}
	return false;
}

static void hdrs_line(struct hdrs *h, const char *line)
{
	struct curl_slist *l;
	if (h->err)
		return;
	if (!(l = curl_slist_append(h->l, line)))
		h->err = -ENOMEM;
	else
		h->l = l;
}

/* hdrs_add() - one header of the client's, when it passes. */
static void hdrs_add(struct hdrs *h, const char *name, size_t nlen, const char *value)
{
	if (!nlen || hop(name, nlen) || name_in(name, nlen, node_only) ||
	    set_by_target(h->t, name, nlen) || in_list(h->conn, name, nlen) ||
	    strpbrk(value, "\r\n") || memchr(name, ' ', nlen))
		return;
	h->accept |= fwd_name_is(name, nlen, "Accept");
	h->ctype |= fwd_name_is(name, nlen, "Content-Type");
	char *line;
	/* "Name;" is how curl sends a header with an empty value. */
	int n = *value ? asprintf(&line, "%.*s: %s", (int)nlen, name, value)
	               : asprintf(&line, "%.*s;", (int)nlen, name);
	if (n < 0) {
		h->err = -ENOMEM;
		return;
	}
	hdrs_line(h, line);
	free(line);
}

/* hdrs_end() - the target's headers, and none of curl's own defaults. */
static int hdrs_end(struct hdrs *h, struct curl_slist **out)
{
	for (const char *const *t = h->t->headers; t && *t; t++)
		hdrs_line(h, *t);
	hdrs_line(h, "Expect:");
	if (!h->accept)
		hdrs_line(h, "Accept:");
	if (!h->ctype)
		hdrs_line(h, "Content-Type:");
	if (h->err) {
		curl_slist_free_all(h->l);
		*out = NULL;
		return h->err;
	}
	*out = h->l;
	return 0;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
	(void)kind;
	hdrs_add(cls, key, strlen(key), value ? value : "");
	return MHD_YES;
}

int fwd_request_headers(struct MHD_Connection *c, const struct fwd_target *t,
                        struct curl_slist **out)
{
	struct hdrs h = { .t = t };
	h.conn = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Connection");
	MHD_get_connection_values(c, MHD_HEADER_KIND, add_header, &h);
	return hdrs_end(&h, out);
}

int fwd_lines_headers(const char *const *lines, const struct fwd_target *t, struct curl_slist **out)
{
	struct hdrs h = { .t = t };
	for (const char *const *l = lines; l && *l; l++) {
		const char *colon = strchr(*l, ':');
		if (!colon)
			continue;
		const char *v = colon + 1;
		v += strspn(v, " \t");
		hdrs_add(&h, *l, (size_t)(colon - *l), v);
	}
	return hdrs_end(&h, out);
}

/* ---- curl ---------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

void fwd_curl_init(void)
{
	pthread_once(&curl_once, curl_init_once);
}

int fwd_easy_common(CURL *e, const struct fwd_target *t, const char *url,
                    const struct curl_slist *headers, char *errbuf)
{
	errbuf[0] = '\0';
	CURLcode r = curl_easy_setopt(e, CURLOPT_URL, url);
	if (r == CURLE_OK)
		r = curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (r != CURLE_OK)
		return r == CURLE_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)t->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	return 0;
}
