/* Buffered calls to another coved node (fwd_call.h). */
#include "daemon/cluster/fwd_call.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/fwd_pool.h"
#include "daemon/http/reply.h"
#include "errf.h"

struct sink {
	char *p;
	size_t len, cap;
	bool over;
};

static size_t sink_write(char *p, size_t size, size_t nmemb, void *cls)
{
	struct sink *k = cls;
	size_t n = size * nmemb;
	if (n > FWD_ANSWER_MAX - k->len) {
		k->over = true;
		return 0;
	}
	if (k->len + n + 1 > k->cap) {
		size_t cap = k->cap ? k->cap : 4096;
		while (cap < k->len + n + 1)
			cap *= 2;
		char *b = realloc(k->p, cap);
		if (!b)
			return 0;
		k->p = b;
		k->cap = cap;
	}
	memcpy(k->p + k->len, p, n);
	k->len += n;
	k->p[k->len] = '\0';
	return n;
}

/* call_error() - a failed call's errno and message. */
static int call_error(CURL *e, CURLcode rc, const struct sink *k, const struct fwd_target *t,
                      const char *errbuf, char *err, size_t errlen)
{
	long connected = 0;
	curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connected);
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
	if (k->over)
		return errf(err, errlen, -EMSGSIZE, "node %s answered over %u bytes", t->base,
		            FWD_ANSWER_MAX);
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
	    (rc == CURLE_OPERATION_TIMEDOUT && !connected))
		return errf(err, errlen, -ECONNREFUSED, "node %s cannot be reached: %s", t->base,
		            why);
	if (rc == CURLE_OPERATION_TIMEDOUT)
		return errf(err, errlen, -ETIMEDOUT, "node %s did not answer in time: %s", t->base,
		            why);
	if (rc == CURLE_OUT_OF_MEMORY || rc == CURLE_WRITE_ERROR)
		return errf(err, errlen, -ENOMEM, "out of memory reading node %s's answer",
		            t->base);
	return errf(err, errlen, -EPROTO, "node %s: %s", t->base, why);
}

static bool plain_path(const char *s)
{
	if (s[0] != '/')
		return false;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

int fwd_call(const struct fwd_target *t, const char *method, const char *url_with_query,
             const char *const *client_headers, const char *body, size_t len, unsigned timeout_ms,
             struct fwd_answer *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	int r = fwd_check_target(t, err, errlen);
	if (r < 0)
		return r;
	if (!plain_path(url_with_query) || strlen(url_with_query) > FWD_URL_MAX || !method[0] ||
	    strpbrk(method, " \t\r\n"))
		return errf(err, errlen, -EINVAL, "forward to %s: bad method or URL", t->base);
	char *url = NULL, errbuf[CURL_ERROR_SIZE];
	struct curl_slist *h = NULL;
	struct sink k = { 0 };
	bool clean = false;
	struct fwd_conn *conn = fwd_conn_get(t->base);
	CURL *e = conn ? fwd_conn_easy(conn) : NULL;
	size_t blen = strlen(t->base);
	while (blen && t->base[blen - 1] == '/')
		blen--;
	if (!e || asprintf(&url, "%.*s%s", (int)blen, t->base, url_with_query) < 0 ||
	    fwd_lines_headers(client_headers, t, &h) < 0 ||
	    fwd_easy_common(e, t, url, h, errbuf) < 0) {
		r = errf(err, errlen, -ENOMEM, "out of memory calling node %s", t->base);
		goto out;
	}
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	if (len || !strcmp(method, "POST") || !strcmp(method, "PUT") || !strcmp(method, "PATCH")) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &k);
	CURLcode rc = curl_easy_perform(e);
	clean = rc == CURLE_OK;
	if (rc != CURLE_OK) {
		r = call_error(e, rc, &k, t, errbuf, err, errlen);
		goto out;
	}
	const char *ct = NULL;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &a->status);
	curl_easy_getinfo(e, CURLINFO_CONTENT_TYPE, &ct);
	a->body = k.p ? k.p : strdup("");
	a->len = k.len;
	a->content_type = ct ? strdup(ct) : NULL;
	k.p = NULL;
	if (!a->body || (ct && !a->content_type)) {
		fwd_answer_free(a);
		r = errf(err, errlen, -ENOMEM, "out of memory calling node %s", t->base);
	}
out:
	free(k.p);
	free(url);
	curl_slist_free_all(h);
	fwd_conn_put(conn, clean);
	return r;
}

void fwd_answer_free(struct fwd_answer *a)
{
	free(a->body);
	free(a->content_type);
	memset(a, 0, sizeof(*a));
}

enum MHD_Result fwd_relay(struct MHD_Connection *c, const struct fwd_answer *a)
{
	if (a->status < 200 || a->status > 999) {
		char msg[64];
		snprintf(msg, sizeof(msg), "the owner node answered status %ld", a->status);
		return coved_json_error(c, 502, msg);
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(
	    a->len, a->body ? a->body : (void *)"", MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (a->content_type)
		MHD_add_response_header(r, "Content-Type", a->content_type);
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)a->status, r);
	MHD_destroy_response(r);
	return ret;
}
