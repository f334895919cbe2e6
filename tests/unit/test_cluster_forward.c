/* Unit tests: daemon/cluster/forward.c between two in-process
 * libmicrohttpd servers, an "owner" (echo, upload hash, download, a
 * stream, a JSON call) and a "front" whose handler forwards to it, driven
 * by libcurl as the client: 50 MB each way through bounded buffers, a
 * stream's first chunk before its second is sent, headers and query in
 * and out (a forged X-Cove-Tenant dropped), 502 for a node that is down,
 * 504 for one that never answers, a client that hangs up mid-download,
 * fwd_call with fwd_relay, and kept connections: forwards and calls in a
 * row reuse one, a cut one is never kept. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/cluster/forward.h"
#include "daemon/cluster/fwd_pool.h"
#include "daemon/http/reply.h"
#include "unit.h"

#define MB (1024 * 1024)

static struct MHD_Daemon *owner, *front;
static char owner_url[64], front_url[64];
static const char *const node_headers[] = { "X-Cove-Tenant: t1", "X-Cove-Node-Auth: s3cret", NULL };
static struct fwd_target target = { .base = owner_url,
	                            .headers = node_headers,
	                            .connect_timeout_ms = 1000,
	                            .idle_timeout_ms = 5000 };

/* What the owner saw and did, what the front's forwards cost. */
static char seen_path[256], seen_query[256], seen_tenant[128], seen_auth[64], seen_test[64];
static char seen_method[16];
static bool seen_drop, seen_empty;
static atomic_ullong owner_sent;
static atomic_int owner_body_freed, owner_done, front_closed;
static atomic_size_t front_peak;
static int64_t second_sent_ms;

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i ^ (i >> 8) ^ (i >> 16) ^ (i >> 24) ^ 0x5a);
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t pattern_hash(uint64_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	uint8_t buf[4096];
	for (uint64_t off = 0; off < len; off += sizeof(buf)) {
		size_t n = len - off < sizeof(buf) ? len - off : sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(off + i);
		h = fnv(h, buf, n);
	}
	return h;
}

/* ---- the owner ------------------------------------------------------------ */

struct oreq {
	uint64_t len, hash;
	char body[256];
};

static enum MHD_Result seen_header(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	(void)cls, (void)kind;
	if (!strcasecmp(k, "X-Cove-Tenant"))
		snprintf(seen_tenant + strlen(seen_tenant),
		         sizeof(seen_tenant) - strlen(seen_tenant), "%s%s",
		         seen_tenant[0] ? "," : "", v);
	else if (!strcasecmp(k, "X-Cove-Node-Auth"))
		snprintf(seen_auth, sizeof(seen_auth), "%s", v);
	else if (!strcasecmp(k, "X-Test"))
		snprintf(seen_test, sizeof(seen_test), "%s", v);
	else if (!strcasecmp(k, "X-Drop"))
		seen_drop = true;
	else if (!strcasecmp(k, "X-Empty"))
		seen_empty = v && !v[0];
	return MHD_YES;
}

static enum MHD_Result seen_arg(void *cls, enum MHD_ValueKind kind, const char *k, const char *v)
{
	(void)cls, (void)kind;
	size_t n = strlen(seen_query);
	snprintf(seen_query + n, sizeof(seen_query) - n, "%s%s%s%s", n ? "&" : "", k, v ? "=" : "",
	         v ? v : "");
	return MHD_YES;
}

static ssize_t download_body(void *cls, uint64_t pos, char *buf, size_t max)
{
	uint64_t size = (uint64_t)(uintptr_t)cls;
	size_t n = max < size - pos ? max : (size_t)(size - pos);
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)pattern(pos + i);
	owner_sent += n;
	return (ssize_t)n;
}

static ssize_t stream_body(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls, (void)max;
	if (pos == 0) {
		memcpy(buf, "first\n", 6);
		return 6;
	}
	if (pos == 6) {
		sleep(1);
		second_sent_ms = mono_ms();
		memcpy(buf, "second\n", 7);
		return 7;
	}
	return MHD_CONTENT_READER_END_OF_STREAM;
}

/* The first chunk, then 2 s of silence before the second. */
static ssize_t hold_body(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls, (void)max;
	if (pos == 0) {
		memcpy(buf, "first\n", 6);
		return 6;
	}
	if (pos > 6)
		return MHD_CONTENT_READER_END_OF_STREAM;
	sleep(2);
	memcpy(buf, "second\n", 7);
	return 7;
}

static void body_freed(void *cls)
{
	(void)cls;
	owner_body_freed++;
}

static enum MHD_Result owner_answer(struct MHD_Connection *c, const char *url, struct oreq *r)
{
	struct MHD_Response *resp;
	unsigned status = 200;
	if (!strcmp(url, "/download")) {
		const char *s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "size");
		uint64_t size = strtoull(s ? s : "0", NULL, 10);
		resp = MHD_create_response_from_callback(size, 64 * 1024, download_body,
		                                         (void *)(uintptr_t)size, body_freed);
	} else if (!strcmp(url, "/stream")) {
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, stream_body, NULL,
		                                         NULL);
	} else if (!strcmp(url, "/hold")) {
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, hold_body, NULL,
		                                         NULL);
	} else if (!strcmp(url, "/nocontent")) {
		status = 204;
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(resp, "X-Gone", "yes");
	} else if (!strcmp(url, "/json")) {
		status = 201;
		char *b = strdup(r->body);
		resp = MHD_create_response_from_buffer(strlen(b), b, MHD_RESPMEM_MUST_FREE);
		MHD_add_response_header(resp, "Content-Type", "application/json");
	} else {
		snprintf(r->body, sizeof(r->body), "len=%llu hash=%016llx",
		         (unsigned long long)r->len, (unsigned long long)r->hash);
		resp = MHD_create_response_from_buffer(strlen(r->body), r->body,
		                                       MHD_RESPMEM_MUST_COPY);
		MHD_add_response_header(resp, "Grpc-Status", "0");
		MHD_add_response_header(resp, "Content-Disposition", "attachment; filename=\"x\"");
		MHD_add_response_header(resp, "Content-Type", "text/plain");
	}
	enum MHD_Result ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result owner_cb(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **req_cls)
{
	(void)cls, (void)version;
	struct oreq *r = *req_cls;
	if (!r) {
		*req_cls = r = calloc(1, sizeof(*r));
		r->hash = 0xcbf29ce484222325ULL;
		if (strncmp(url, "/echo", 5) == 0) {
			snprintf(seen_path, sizeof(seen_path), "%s", url);
			snprintf(seen_method, sizeof(seen_method), "%s", method);
			seen_query[0] = seen_tenant[0] = '\0';
			MHD_get_connection_values(c, MHD_HEADER_KIND, seen_header, NULL);
			MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, seen_arg, NULL);
		}
		if (!strcmp(url, "/reject"))
			return coved_json_error(c, 403, "no such sandbox here");
		return MHD_YES;
	}
	if (*size) {
		if (!strcmp(url, "/json"))
			snprintf(r->body + strlen(r->body), sizeof(r->body) - strlen(r->body),
			         "%.*s", (int)*size, data);
		r->hash = fnv(r->hash, (const uint8_t *)data, *size);
		r->len += *size;
		*size = 0;
		return MHD_YES;
	}
	return owner_answer(c, url, r);
}

static void free_req(void *cls, struct MHD_Connection *c, void **req_cls,
                     enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)c, (void)toe;
	free(*req_cls);
	*req_cls = NULL;
	owner_done++;
}

/* ---- the front ------------------------------------------------------------ */

struct freq {
	struct fwd *f;
	bool relay;
	char body[256];
	size_t len;
};

static enum MHD_Result relay(struct MHD_Connection *c, struct freq *r)
{
	static const char *const client[] = { "Content-Type: application/json",
		                              "X-Cove-Tenant: forged", NULL };
	struct fwd_answer a;
	char err[256];
	if (fwd_call(&target, "POST", "/json?x=1", client, r->body, r->len, 5000, &a, err,
	             sizeof(err)) < 0)
		return coved_json_error(c, 502, err);
	enum MHD_Result ret = fwd_relay(c, &a);
	fwd_answer_free(&a);
	return ret;
}

static enum MHD_Result front_cb(void *cls, struct MHD_Connection *c, const char *url,
                                const char *method, const char *version, const char *data,
                                size_t *size, void **req_cls)
{
	(void)cls, (void)version;
	struct freq *r = *req_cls;
	if (!r) {
		*req_cls = r = calloc(1, sizeof(*r));
		if (!strcmp(url, "/relay")) {
			r->relay = true;
			return MHD_YES;
		}
		char err[256];
		r->f = fwd_open(c, method, url, &target, err, sizeof(err));
		return r->f ? MHD_YES : coved_json_error(c, 502, err);
	}
	if (!r->relay)
		return fwd_feed(r->f, c, data, size);
	if (*size) {
		size_t n =
		    *size < sizeof(r->body) - 1 - r->len ? *size : sizeof(r->body) - 1 - r->len;
		memcpy(r->body + r->len, data, n);
		r->len += n;
		*size = 0;
		return MHD_YES;
	}
	return relay(c, r);
}

static void front_done(void *cls, struct MHD_Connection *c, void **req_cls,
                       enum MHD_RequestTerminationCode toe)
{
	(void)cls, (void)c, (void)toe;
	struct freq *r = *req_cls;
	if (r && r->f) {
		size_t p = fwd_peak(r->f);
		if (p > front_peak)
			front_peak = p;
		fwd_close(r->f);
		front_closed++;
	}
	free(r);
	*req_cls = NULL;
}

static struct MHD_Daemon *serve(MHD_AccessHandlerCallback cb, MHD_RequestCompletedCallback done,
                                char *url, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct MHD_Daemon *d = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL, cb,
	    NULL, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, done, NULL,
	    MHD_OPTION_CONNECTION_TIMEOUT, 60u, MHD_OPTION_END);
	ck_assert_ptr_nonnull(d);
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(url, len, "http://127.0.0.1:%u", (unsigned)i->port);
	return d;
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	owner = serve(owner_cb, free_req, owner_url, sizeof(owner_url));
	front = serve(front_cb, front_done, front_url, sizeof(front_url));
	target.base = owner_url;
	target.idle_timeout_ms = 5000;
	owner_sent = 0;
	owner_body_freed = owner_done = front_closed = 0;
	front_peak = 0;
}

static void teardown(void)
{
	fwd_pool_flush();
	MHD_stop_daemon(front);
	MHD_stop_daemon(owner);
}

/* wait_for() - waits (10 s at most) until *v reaches n; the ms it took. */
static int64_t wait_for(atomic_int *v, int n)
{
	int64_t t0 = mono_ms();
	while (*v < n && mono_ms() - t0 < 10000)
		usleep(5000);
	ck_assert_int_ge(*v, n);
	return mono_ms() - t0;
}

/* ---- the client ----------------------------------------------------------- */

struct client {
	long status;
	uint64_t len, hash, up_len, up_pos, stop_at, up_stop_at;
	char body[512], headers[2048];
	int64_t first_ms;
};

static size_t client_read(char *buf, size_t size, size_t n, void *cls)
{
	struct client *k = cls;
	size_t max = size * n, i = 0;
	if (k->up_stop_at && k->up_pos >= k->up_stop_at)
		return CURL_READFUNC_ABORT;
	for (; i < max && k->up_pos < k->up_len; i++)
		buf[i] = (char)pattern(k->up_pos++);
	return i;
}

static size_t client_write(char *p, size_t size, size_t n, void *cls)
{
	struct client *k = cls;
	size_t len = size * n;
	if (!k->first_ms)
		k->first_ms = mono_ms();
	if (k->len < sizeof(k->body) - 1) {
		size_t c = len < sizeof(k->body) - 1 - k->len ? len : sizeof(k->body) - 1 - k->len;
		memcpy(k->body + k->len, p, c);
		k->body[k->len + c] = '\0';
	}
	k->hash = fnv(k->hash, (const uint8_t *)p, len);
	k->len += len;
	return k->stop_at && k->len >= k->stop_at ? 0 : len;
}

static size_t client_header(char *p, size_t size, size_t n, void *cls)
{
	struct client *k = cls;
	size_t h = strlen(k->headers);
	snprintf(k->headers + h, sizeof(k->headers) - h, "%.*s", (int)(size * n), p);
	return size * n;
}

/* fetch() - method path on the front; up_len >= 0 uploads that many
 * pattern bytes (with Content-Length unless chunked). */
static CURLcode fetch(struct client *k, const char *method, const char *path,
                      const char *const *headers, int64_t up_len, bool chunked)
{
	char url[512];
	snprintf(url, sizeof(url), "%s%s", front_url, path);
	k->hash = 0xcbf29ce484222325ULL;
	CURL *e = curl_easy_init();
	struct curl_slist *h = NULL;
	for (; headers && *headers; headers++)
		h = curl_slist_append(h, *headers);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(e, CURLOPT_NOBODY, (long)!strcmp(method, "HEAD"));
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, client_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, k);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, client_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, k);
	if (up_len >= 0) {
		k->up_len = (uint64_t)up_len;
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, client_read);
		curl_easy_setopt(e, CURLOPT_READDATA, k);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, chunked ? (curl_off_t)-1 : up_len);
	}
	CURLcode rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &k->status);
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	return rc;
}

/* ---- the tests ------------------------------------------------------------ */

START_TEST(upload_50mb_bounded)
{
	struct client k = { 0 };
	ck_assert_int_eq(fetch(&k, "PUT", "/upload", NULL, 50 * MB, false), CURLE_OK);
	ck_assert_int_eq(k.status, 200);
	char want[128];
	snprintf(want, sizeof(want), "len=%u hash=%016llx", 50 * MB,
	         (unsigned long long)pattern_hash(50 * MB));
	ck_assert_str_eq(k.body, want);
	wait_for(&front_closed, 1);
	ck_assert_uint_gt(front_peak, 0);
	ck_assert_uint_le(front_peak, 2 * FWD_BUFFER);

	struct client c = { 0 };
	ck_assert_int_eq(fetch(&c, "POST", "/upload", NULL, 3 * MB + 17, true), CURLE_OK);
	snprintf(want, sizeof(want), "len=%u hash=%016llx", 3 * MB + 17,
	         (unsigned long long)pattern_hash(3 * MB + 17));
	ck_assert_str_eq(c.body, want);
}
END_TEST

START_TEST(download_50mb_with_length)
{
	struct client k = { 0 };
	char path[64];
	snprintf(path, sizeof(path), "/download?size=%u", 50 * MB);
	ck_assert_int_eq(fetch(&k, "GET", path, NULL, -1, false), CURLE_OK);
	ck_assert_int_eq(k.status, 200);
	ck_assert_uint_eq(k.len, 50 * MB);
	ck_assert_uint_eq(k.hash, pattern_hash(50 * MB));
	ck_assert_ptr_nonnull(strcasestr(k.headers, "Content-Length: 52428800"));
	wait_for(&front_closed, 1);
	ck_assert_uint_le(front_peak, 2 * FWD_BUFFER);
}
END_TEST

START_TEST(empty_bodies)
{
	struct client k = { 0 };
	ck_assert_int_eq(fetch(&k, "POST", "/upload", NULL, 0, false), CURLE_OK);
	ck_assert_int_eq(k.status, 200);
	ck_assert_str_eq(k.body, "len=0 hash=cbf29ce484222325");

	struct client r = { 0 }; /* answered before the upload is read */
	ck_assert_int_eq(fetch(&r, "PUT", "/reject", NULL, 10 * MB, false), CURLE_OK);
	/* The owner closes while the upload still flows: when the reset
	 * reaches curl before the answer does, the answer is lost with the
	 * connection (HTTP/1.1 has no way back), and the client gets 502. */
	ck_assert_msg(r.status == 403 || r.status == 502, "status %ld", r.status);
	if (r.status == 403)
		ck_assert_str_eq(r.body, "{\"code\":403,\"message\":\"no such sandbox here\"}");

	struct client h = { 0 };
	ck_assert_int_eq(fetch(&h, "HEAD", "/download?size=1000", NULL, -1, false), CURLE_OK);
	ck_assert_int_eq(h.status, 200);
	ck_assert_uint_eq(h.len, 0);
	ck_assert_ptr_nonnull(strcasestr(h.headers, "Content-Length: 1000"));

	struct client n = { 0 };
	ck_assert_int_eq(fetch(&n, "GET", "/nocontent", NULL, -1, false), CURLE_OK);
	ck_assert_int_eq(n.status, 204);
	ck_assert_ptr_nonnull(strcasestr(n.headers, "X-Gone: yes"));
	wait_for(&front_closed, 4);
}
END_TEST

START_TEST(stream_first_chunk_early)
{
	struct client k = { 0 };
	ck_assert_int_eq(fetch(&k, "POST", "/stream", NULL, 5, false), CURLE_OK);
	ck_assert_int_eq(k.status, 200);
	ck_assert_str_eq(k.body, "first\nsecond\n");
	ck_assert_int_ne(k.first_ms, 0);
	ck_assert_int_lt(k.first_ms, second_sent_ms);
}
END_TEST

START_TEST(client_gone_in_silent_stream)
{
	/* Away after the first chunk: the front sees it while the owner is
	 * silent, not at its next chunk 2 s later. */
	struct client k = { .stop_at = 1 };
	int64_t t0 = mono_ms();
	ck_assert_int_eq(fetch(&k, "POST", "/hold", NULL, 0, false), CURLE_WRITE_ERROR);
	wait_for(&front_closed, 1);
	ck_assert_int_lt(mono_ms() - t0, 1500);
}
END_TEST

START_TEST(stream_idle_deadline)
{
	target.idle_timeout_ms = 500;
	struct client k = { 0 };
	int64_t t0 = mono_ms();
	ck_assert_int_ne(fetch(&k, "POST", "/hold", NULL, 0, false), CURLE_OK);
	ck_assert_int_eq(k.status, 200);
	ck_assert_str_eq(k.body, "first\n");
	ck_assert_int_lt(mono_ms() - t0, 1800);
	wait_for(&front_closed, 1);
}
END_TEST

START_TEST(client_aborts_mid_upload)
{
	struct client k = { .up_stop_at = 4 * MB };
	ck_assert_int_eq(fetch(&k, "PUT", "/upload", NULL, 50 * MB, false),
	                 CURLE_ABORTED_BY_CALLBACK);
	wait_for(&front_closed, 1);
	wait_for(&owner_done, 1); /* the owner's request ended too */
}
END_TEST

START_TEST(headers_and_query_pass)
{
	static const char *const h[] = { "X-Test: hello",
		                         "X-Cove-Tenant: forged",
		                         "X-Cove-Node-Auth: forged",
		                         "Connection: keep-alive, X-Drop",
		                         "X-Drop: 1",
		                         "X-Empty;",
		                         NULL };
	struct client k = { 0 };
	ck_assert_int_eq(fetch(&k, "DELETE", "/echo/a%20b?a=1&b=x%20y%26z&flag", h, -1, false),
	                 CURLE_OK);
	ck_assert_int_eq(k.status, 200);
	ck_assert_str_eq(seen_method, "DELETE");
	ck_assert_str_eq(seen_path, "/echo/a b");
	ck_assert_str_eq(seen_query, "a=1&b=x y&z&flag");
	ck_assert_str_eq(seen_tenant, "t1");
	ck_assert_str_eq(seen_auth, "s3cret");
	ck_assert_str_eq(seen_test, "hello");
	ck_assert(!seen_drop);
	ck_assert(seen_empty);
	ck_assert_ptr_nonnull(strcasestr(k.headers, "Grpc-Status: 0"));
	ck_assert_ptr_nonnull(
	    strcasestr(k.headers, "Content-Disposition: attachment; filename=\"x\""));
	ck_assert_ptr_nonnull(strcasestr(k.headers, "Content-Type: text/plain"));
}
END_TEST

START_TEST(owner_down_502_fast)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&sa, &sl), 0);
	static char down[64];
	snprintf(down, sizeof(down), "http://127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
	target.base = down; /* bound, never listening: refused */
	struct client k = { 0 };
	int64_t t0 = mono_ms();
	ck_assert_int_eq(fetch(&k, "GET", "/echo", NULL, -1, false), CURLE_OK);
	ck_assert_int_lt(mono_ms() - t0, 2000);
	ck_assert_int_eq(k.status, 502);
	ck_assert_ptr_nonnull(strstr(k.body, "\"code\":502"));
	ck_assert_ptr_nonnull(strstr(k.body, down));

	struct client u = { 0 }; /* an upload to it is read and dropped, then the 502 */
	ck_assert_int_eq(fetch(&u, "PUT", "/upload", NULL, 2 * MB, false), CURLE_OK);
	ck_assert_int_eq(u.status, 502);
	close(s);
}
END_TEST

START_TEST(owner_silent_504)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(s, 8), 0); /* connects, never answers */
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&sa, &sl), 0);
	static char silent[64];
	snprintf(silent, sizeof(silent), "http://127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
	target.base = silent;
	target.idle_timeout_ms = 1000;
	struct client k = { 0 };
	int64_t t0 = mono_ms();
	ck_assert_int_eq(fetch(&k, "GET", "/echo", NULL, -1, false), CURLE_OK);
	int64_t took = mono_ms() - t0;
	ck_assert_int_eq(k.status, 504);
	ck_assert_ptr_nonnull(strstr(k.body, "\"code\":504"));
	ck_assert_int_ge(took, 900);
	ck_assert_int_lt(took, 3000);
	close(s);
}
END_TEST

START_TEST(client_hangs_up_mid_download)
{
	struct client k = { .stop_at = 4 * MB };
	char path[64];
	snprintf(path, sizeof(path), "/download?size=%u", 1024u * MB);
	ck_assert_int_eq(fetch(&k, "GET", path, NULL, -1, false), CURLE_WRITE_ERROR);
	int64_t end = mono_ms() + 10000;
	while ((front_closed < 1 || owner_body_freed < 1) && mono_ms() < end)
		usleep(10000);
	ck_assert_int_eq(front_closed, 1);
	ck_assert_int_eq(owner_body_freed, 1); /* the owner's transfer was cut, not drained */
	ck_assert_uint_lt(owner_sent, 64ull * MB);
}
END_TEST

START_TEST(call_and_relay)
{
	static const char *const h[] = { "Content-Type: application/json", NULL };
	struct client k = { 0 };
	static const char body[] = "{\"template\":\"base\"}";
	char url[128];
	snprintf(url, sizeof(url), "%s/relay", front_url);
	CURL *e = curl_easy_init();
	struct curl_slist *l = curl_slist_append(NULL, h[0]);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, l);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, client_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &k);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, client_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, &k);
	ck_assert_int_eq(curl_easy_perform(e), CURLE_OK);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &k.status);
	curl_easy_cleanup(e);
	curl_slist_free_all(l);
	ck_assert_int_eq(k.status, 201);
	ck_assert_str_eq(k.body, body);
	ck_assert_ptr_nonnull(strcasestr(k.headers, "Content-Type: application/json"));

	/* fwd_call alone: its errors. */
	struct fwd_answer a;
	char err[256];
	struct fwd_target bad = target;
	bad.base = "ftp://x";
	ck_assert_int_eq(fwd_call(&bad, "GET", "/", NULL, NULL, 0, 1000, &a, err, sizeof(err)),
	                 -EINVAL);
	bad.base = "http://127.0.0.1:1";
	ck_assert_int_eq(fwd_call(&bad, "GET", "/", NULL, NULL, 0, 1000, &a, err, sizeof(err)),
	                 -ECONNREFUSED);
	ck_assert_ptr_nonnull(strstr(err, "127.0.0.1:1"));
	ck_assert_int_eq(fwd_call(&target, "GET", "/download?size=17000000", NULL, NULL, 0, 20000,
	                          &a, err, sizeof(err)),
	                 -EMSGSIZE);
	ck_assert_int_eq(
	    fwd_call(&target, "GET", "/echo?q=1", NULL, NULL, 0, 5000, &a, err, sizeof(err)), 0);
	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(a.content_type, "text/plain");
	ck_assert_str_eq(seen_tenant, "t1");
	fwd_answer_free(&a);
}
END_TEST

/* Forwards and calls one after another reuse one connection to the
 * owner; one cut short (the client hung up) is closed, not kept. */
START_TEST(connections_kept)
{
	size_t made0, reused0, made, reused;
	fwd_pool_stats(&made0, &reused0);
	for (int i = 0; i < 5; i++) {
		struct client k = { 0 };
		ck_assert_int_eq(fetch(&k, "GET", "/echo?q=1", NULL, -1, false), CURLE_OK);
		ck_assert_int_eq(k.status, 200);
		wait_for(&front_closed, i + 1);
	}
	struct fwd_answer a;
	char err[256];
	ck_assert_int_eq(
	    fwd_call(&target, "GET", "/echo?q=2", NULL, NULL, 0, 5000, &a, err, sizeof(err)), 0);
	fwd_answer_free(&a);
	fwd_pool_stats(&made, &reused);
	ck_assert_uint_eq(made - made0, 1);
	ck_assert_uint_eq(reused - reused0, 5);

	struct client cut = { .stop_at = 4 * MB };
	char path[64];
	snprintf(path, sizeof(path), "/download?size=%u", 1024u * MB);
	ck_assert_int_eq(fetch(&cut, "GET", path, NULL, -1, false), CURLE_WRITE_ERROR);
	wait_for(&front_closed, 6);
	struct client k = { 0 };
	ck_assert_int_eq(fetch(&k, "GET", "/echo?q=3", NULL, -1, false), CURLE_OK);
	ck_assert_int_eq(k.status, 200);
	fwd_pool_stats(&made, &reused);
	ck_assert_uint_eq(made - made0, 2); /* the cut one's was not kept */
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("cluster_forward");
	TCase *t = tcase_create("forward");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 120);
	tcase_add_test(t, upload_50mb_bounded);
	tcase_add_test(t, download_50mb_with_length);
	tcase_add_test(t, empty_bodies);
	tcase_add_test(t, stream_first_chunk_early);
	tcase_add_test(t, client_gone_in_silent_stream);
	tcase_add_test(t, stream_idle_deadline);
	tcase_add_test(t, client_aborts_mid_upload);
	tcase_add_test(t, headers_and_query_pass);
	tcase_add_test(t, owner_down_502_fast);
	tcase_add_test(t, owner_silent_504);
	tcase_add_test(t, client_hangs_up_mid_download);
	tcase_add_test(t, call_and_relay);
	tcase_add_test(t, connections_kept);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
