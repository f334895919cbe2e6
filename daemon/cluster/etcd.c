/* etcd's v3 JSON gateway over libcurl (etcd.h). */
#include "daemon/cluster/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errf.h"

/* Idle easy handles kept for the connections they hold open. */
#define IDLE_MAX 8

struct etcd {
	char *ep[ETCD_ENDPOINTS_MAX];
	size_t n;
	unsigned int timeout_ms;
	atomic_size_t good;         /* the endpoint that answered last */
	struct curl_slist *headers; /* read-only once made */
	pthread_mutex_t lock;       /* guards idle[] */
	CURL *idle[IDLE_MAX];
	size_t nidle;
};

/* One answer's body, capped at ETCD_ANSWER_MAX; ep: who sent it. */
struct answer {
	char *p;
	size_t len, cap;
	bool over;
	const char *ep;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* An http:// or https:// URL with a host, printable, bounded: its length
 * without trailing slashes in *len. */
static int endpoint_check(const char *s, size_t *len, char *err, size_t errlen)
{
	if (!s)
		return errf(err, errlen, -EINVAL, "etcd endpoint missing");
	size_t n = strlen(s), scheme = strncmp(s, "https://", 8) == 0 ? 8 : 0;
	if (strncmp(s, "http://", 7) == 0)
		scheme = 7;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return errf(err, errlen, -EINVAL,
			            "etcd endpoint has a space or control byte");
	while (n > scheme && s[n - 1] == '/')
		n--;
	if (!scheme || n == scheme || n > ETCD_ENDPOINT_MAX)
		return errf(
		    err, errlen, -EINVAL,
		    "etcd endpoint \"%.64s\" is not an http:// or https:// URL of at most %u "
		    "bytes",
		    s, ETCD_ENDPOINT_MAX);
	*len = n;
	return 0;
}

struct etcd *etcd_new(const char *const *endpoints, size_t n, unsigned int timeout_ms, char *err,
                      size_t errlen)
{
	if (n < 1 || n > ETCD_ENDPOINTS_MAX || timeout_ms < 1) {
		errf(err, errlen, -EINVAL, "etcd: %zu endpoints (1 to %u) and a timeout of %u ms",
		     n, ETCD_ENDPOINTS_MAX, timeout_ms);
		return NULL;
	}
	size_t len[ETCD_ENDPOINTS_MAX];
	for (size_t i = 0; i < n; i++)
		if (endpoint_check(endpoints[i], &len[i], err, errlen))
			return NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		errf(err, errlen, -EIO, "etcd: libcurl: %s", curl_easy_strerror(curl_init_rc));
		return NULL;
	}
	struct etcd *e = calloc(1, sizeof(*e));
	if (!e || pthread_mutex_init(&e->lock, NULL)) {
		free(e);
		errf(err, errlen, -ENOMEM, "etcd: out of memory");
		return NULL;
	}
	e->timeout_ms = timeout_ms;
	atomic_init(&e->good, 0);
	for (; e->n < n; e->n++)
		if (!(e->ep[e->n] = strndup(endpoints[e->n], len[e->n])))
			goto oom;
	/* No "Expect: 100-continue" pause before a body. */
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	if (h)
		e->headers = h;
	if (!h || !(h = curl_slist_append(e->headers, "Expect:")))
		goto oom;
	return e;
oom:
	etcd_free(e);
	errf(err, errlen, -ENOMEM, "etcd: out of memory");
	return NULL;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nidle; i++)
		curl_easy_cleanup(e->idle[i]);
	for (size_t i = 0; i < e->n; i++)
		free(e->ep[i]);
	curl_slist_free_all(e->headers);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

static CURL *handle_take(struct etcd *e)
{
	CURL *c = NULL;
	pthread_mutex_lock(&e->lock);
	if (e->nidle)
		c = e->idle[--e->nidle];
	pthread_mutex_unlock(&e->lock);
	return c ? c : curl_easy_init();
}

static void handle_give(struct etcd *e, CURL *c)
{
	pthread_mutex_lock(&e->lock);
	if (e->nidle < IDLE_MAX) {
		e->idle[e->nidle++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&e->lock);
	if (c)
		curl_easy_cleanup(c);
}

static size_t on_data(char *d, size_t size, size_t nmemb, void *arg)
{
	struct answer *a = arg;
	size_t n = size * nmemb;
	if (n > ETCD_ANSWER_MAX - a->len) {
		a->over = true;
		return 0;
	}
	if (a->len + n > a->cap) {
		size_t cap = a->cap ? a->cap : 4096;
		while (cap < a->len + n)
			cap *= 2;
		if (cap > ETCD_ANSWER_MAX)
			cap = ETCD_ANSWER_MAX;
		char *p = realloc(a->p, cap);
		if (!p)
			return 0;
		a->p = p;
		a->cap = cap;
	}
	memcpy(a->p + a->len, d, n);
	a->len += n;
	return n;
}

/* A transfer that failed, as -errno and a message. */
static int curl_failure(CURL *c, CURLcode rc, const char *cerr, const struct answer *a,
                        long total_ms, char *msg, size_t msglen)
{
	long os = 0;
	const char *what = cerr[0] ? cerr : curl_easy_strerror(rc);
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		return errf(msg, msglen, -ETIMEDOUT, "no answer within %ld ms", total_ms);
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os);
		return errf(msg, msglen, os == ECONNREFUSED ? -ECONNREFUSED : -EHOSTUNREACH, "%s",
		            what);
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
		return errf(msg, msglen, -EHOSTUNREACH, "%s", what);
	case CURLE_FILESIZE_EXCEEDED:
		return errf(msg, msglen, -EPROTO, "answer over %u bytes", ETCD_ANSWER_MAX);
	case CURLE_WRITE_ERROR:
		if (a->over)
			return errf(msg, msglen, -EPROTO, "answer over %u bytes", ETCD_ANSWER_MAX);
		return errf(msg, msglen, -ENOMEM, "out of memory for the answer");
	default:
		return errf(msg, msglen, -EIO, "%s", what);
	}
}

/* One POST of body to ep+path.  *retry: whether another endpoint may be
 * tried (a read, or a request that never left, or etcd unavailable). */
static int attempt(const struct etcd *e, CURL *c, const char *ep, const char *path,
                   const char *body, long conn_ms, long total_ms, bool read, struct answer *a,
                   bool *retry, char *msg, size_t msglen)
{
	char url[ETCD_ENDPOINT_MAX + 32], cerr[CURL_ERROR_SIZE] = "", gw[512];
	snprintf(url, sizeof(url), "%s%s", ep, path);
	a->len = 0;
	a->over = false;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->headers);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, conn_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, total_ms);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)ETCD_ANSWER_MAX);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	CURLcode rc = curl_easy_perform(c);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	long status = 0, sent = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &sent);
	int r;
	if (rc != CURLE_OK) {
		*retry = read || sent == 0;
		r = curl_failure(c, rc, cerr, a, total_ms, gw, sizeof(gw));
		return errf(msg, msglen, r, "%s%s: %s", ep, path, gw);
	}
	if (status == 200)
		return 0;
	r = etcd_json_parse_error(a->p, a->len, gw, sizeof(gw));
	if (r == -EPROTO) {
		*retry = read;
		return errf(msg, msglen, -EPROTO, "%s%s: HTTP status %ld without an etcd error", ep,
		            path, status);
	}
	*retry = read && r == -EHOSTUNREACH;
	return errf(msg, msglen, r, "%s%s: %s", ep, path, gw);
}

/* POSTs body (freed here) to path on the endpoints in turn, within the
 * timeout: *a holds the HTTP 200 answer (the caller frees a->p). */
static int request(struct etcd *e, const char *path, char *body, bool read, struct answer *a,
                   char *err, size_t errlen)
{
	char msg[512], all[1024] = "";
	size_t first = atomic_load(&e->good) % e->n, at = 0;
	int64_t deadline = mono_ms() + e->timeout_ms;
	int r = -ETIMEDOUT;
	memset(a, 0, sizeof(*a));
	CURL *c = handle_take(e);
	if (!c) {
		free(body);
		return errf(err, errlen, -ENOMEM, "etcd: out of memory for a connection");
	}
	for (size_t k = 0; k < e->n; k++) {
		size_t i = (first + k) % e->n;
		int64_t left = deadline - mono_ms();
		bool retry = false;
		if (left <= 0) {
			r = errf(msg, sizeof(msg), -ETIMEDOUT, "%s: out of time (%u ms in all)",
			         e->ep[i], e->timeout_ms);
		} else {
			/* Leave the endpoints after this one their share of the time. */
			long share = (long)(left / (int64_t)(e->n - k)),
			     total = read ? share : left;
			r = attempt(e, c, e->ep[i], path, body, share ? share : 1,
			            total ? total : 1, read, a, &retry, msg, sizeof(msg));
			if (r == 0) {
				atomic_store(&e->good, i);
				a->ep = e->ep[i];
				break;
			}
		}
		at += (size_t)snprintf(all + at, sizeof(all) - at, "%s%s", at ? "; " : "", msg);
		if (at >= sizeof(all))
			at = sizeof(all) - 1;
		if (!retry)
			break;
	}
	handle_give(e, c);
	free(body);
	if (r) {
		free(a->p);
		memset(a, 0, sizeof(*a));
		errf(err, errlen, r, "etcd %s", all);
	}
	return r;
}

/* A 200 answer that did not parse, named after who sent it. */
static int answer_err(const struct answer *a, const char *path, int r, const char *msg, char *err,
                      size_t errlen)
{
	return errf(err, errlen, r, "etcd %s%s: %s", a->ep, path, msg);
}

/* Builds nothing itself: body (from an etcd_json_*_req(), whose status is
 * br) goes to path; *a: the answer. */
static int post(struct etcd *e, const char *path, int br, char *body, bool read, struct answer *a,
                char *err, size_t errlen)
{
	char why[256];
	memset(a, 0, sizeof(*a));
	if (br) {
		snprintf(why, sizeof(why), "%s", err && errlen ? err : "bad request");
		return errf(err, errlen, br, "etcd %s: %s", path, why);
	}
	return request(e, path, body, read, a, err, errlen);
}

/* A range of key (or of every key under it): checks that every kv
 * answered is one asked for. */
static int range(struct etcd *e, const char *key, bool prefix, struct etcd_kvs *out, char *err,
                 size_t errlen)
{
	static const char path[] = "/v3/kv/range";
	struct answer a;
	char *body, msg[512];
	memset(out, 0, sizeof(*out));
	int br = etcd_json_range_req(key, prefix, &body, err, errlen);
	int r = post(e, path, br, body, true, &a, err, errlen);
	if (r)
		return r;
	r = etcd_json_parse_range(a.p, a.len, out, msg, sizeof(msg));
	size_t klen = strlen(key);
	for (size_t i = 0; !r && i < out->n; i++) {
		const struct etcd_kv *kv = &out->kv[i];
		bool match = prefix ? kv->key_len >= klen && memcmp(kv->key, key, klen) == 0
		                    : kv->key_len == klen && memcmp(kv->key, key, klen) == 0;
		if (!match || (!prefix && i > 0))
			r = errf(msg, sizeof(msg), -EPROTO, "answered a key not asked for");
	}
	if (r) {
		etcd_kvs_free(out);
		r = answer_err(&a, path, r, msg, err, errlen);
	}
	free(a.p);
	return r;
}

int etcd_get(struct etcd *e, const char *key, struct etcd_kvs *out, char *err, size_t errlen)
{
	return range(e, key, false, out, err, errlen);
}

int etcd_range_prefix(struct etcd *e, const char *prefix, struct etcd_kvs *out, char *err,
                      size_t errlen)
{
	return range(e, prefix, true, out, err, errlen);
}

/* A write whose answer is a bare header. */
static int header_call(struct etcd *e, const char *path, int br, char *body, bool read, char *err,
                       size_t errlen)
{
	struct answer a;
	char msg[512];
	int r = post(e, path, br, body, read, &a, err, errlen);
	if (r)
		return r;
	r = etcd_json_parse_header(a.p, a.len, NULL, msg, sizeof(msg));
	if (r)
		r = answer_err(&a, path, r, msg, err, errlen);
	free(a.p);
	return r;
}

int etcd_put(struct etcd *e, const char *key, const char *val, size_t len, int64_t lease, char *err,
             size_t errlen)
{
	char *body;
	int br = etcd_json_put_req(key, val, len, lease, &body, err, errlen);
	return header_call(e, "/v3/kv/put", br, body, false, err, errlen);
}

int etcd_delete(struct etcd *e, const char *key, char *err, size_t errlen)
{
	char *body;
	int br = etcd_json_range_req(key, false, &body, err, errlen);
	return header_call(e, "/v3/kv/deleterange", br, body, false, err, errlen);
}

/* A lease that is granted twice (a retry after a lost answer) leaves one
 * unused: it holds no key and expires, so grants count as reads. */
int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id, char *err, size_t errlen)
{
	static const char path[] = "/v3/lease/grant";
	struct answer a;
	char *body, msg[512];
	int64_t ttl;
	int br = etcd_json_lease_req("TTL", ttl_s, &body, err, errlen);
	int r = post(e, path, br, body, true, &a, err, errlen);
	if (r)
		return r;
	r = etcd_json_parse_grant(a.p, a.len, id, &ttl, msg, sizeof(msg));
	if (r)
		r = answer_err(&a, path, r, msg, err, errlen);
	free(a.p);
	return r;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_left, char *err, size_t errlen)
{
	static const char path[] = "/v3/lease/keepalive";
	struct answer a;
	char *body, msg[512];
	int64_t ttl;
	int br = etcd_json_lease_req("ID", id, &body, err, errlen);
	int r = post(e, path, br, body, true, &a, err, errlen);
	if (r)
		return r;
	r = etcd_json_parse_keepalive(a.p, a.len, &ttl, msg, sizeof(msg));
	if (r)
		r = answer_err(&a, path, r, msg, err, errlen);
	else if (ttl_left)
		*ttl_left = ttl;
	free(a.p);
	return r;
}

/* A revoke retried after a lost answer finds the lease gone: -ENOENT,
 * which the caller reads as "revoked" either way. */
int etcd_lease_revoke(struct etcd *e, int64_t id, char *err, size_t errlen)
{
	char *body;
	int br = etcd_json_lease_req("ID", id, &body, err, errlen);
	return header_call(e, "/v3/lease/revoke", br, body, true, err, errlen);
}

static bool only_gets(const struct etcd_op *ops, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ops[i].kind != ETCD_OP_GET)
			return false;
	return true;
}

int etcd_txn(struct etcd *e, const struct etcd_cmp *c, size_t nc, const struct etcd_op *ok,
             size_t nok, const struct etcd_op *fail, size_t nfail, bool *succeeded,
             struct etcd_kvs *got, char *err, size_t errlen)
{
	static const char path[] = "/v3/kv/txn";
	struct answer a;
	char *body, msg[512];
	if (got)
		memset(got, 0, sizeof(*got));
	*succeeded = false;
	int br = etcd_json_txn_req(c, nc, ok, nok, fail, nfail, &body, err, errlen);
	bool read = only_gets(ok, nok) && only_gets(fail, nfail);
	int r = post(e, path, br, body, read, &a, err, errlen);
	if (r)
		return r;
	r = etcd_json_parse_txn(a.p, a.len, succeeded, got, msg, sizeof(msg));
	if (r) {
		*succeeded = false;
		r = answer_err(&a, path, r, msg, err, errlen);
	}
	free(a.p);
	return r;
}
