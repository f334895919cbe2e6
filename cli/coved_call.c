/* One request to coved over its Unix socket (coved_call.h). */
#include "cli/coved_call.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"

#define KEY_HEADER_MAX 600

static size_t on_body(char *data, size_t size, size_t nmemb, void *opaque)
{
	struct cli_answer *a = opaque;
	size_t n = size * nmemb;
	if (n > CLI_COVED_ANSWER_MAX - a->len)
		return 0; /* too long: the transfer fails */
	char *p = realloc(a->p, a->len + n + 1);
	if (!p)
		return 0;
	memcpy(p + a->len, data, n);
	a->p = p;
	a->len += n;
	p[a->len] = 0;
	return n;
}

/* Why curl could not reach coved, in the words an operator acts on. */
static int unreachable(const char *sock, CURLcode c, unsigned int ms, char *err, size_t errlen)
{
	if (c == CURLE_OPERATION_TIMEDOUT)
		return errf(err, errlen, -ETIMEDOUT, "coved did not answer on %s within %u s", sock,
		            (ms + 999) / 1000);
	if (c != CURLE_COULDNT_CONNECT)
		return errf(err, errlen, -EIO, "talking to coved on %s: %s", sock,
		            curl_easy_strerror(c));
	if (access(sock, R_OK | W_OK) < 0 && errno == EACCES)
		return errf(err, errlen, -EACCES,
		            "no permission to connect to %s (coved's socket group, or root)", sock);
	return errf(err, errlen, -ECONNREFUSED, "coved is not running (nothing answers on %s)",
	            sock);
}

int cli_coved_request(const char *sock, const char *key, const struct cli_coved_req *q,
                      long *status, struct cli_answer *a, char *err, size_t errlen)
{
	struct stat st;
	if (stat(sock, &st) < 0)
		return errf(err, errlen, -errno, "coved's socket %s: %s (is coved running?)", sock,
		            strerror(errno));
	if (!S_ISSOCK(st.st_mode))
		return errf(err, errlen, -ENOTSOCK, "%s is not a socket", sock);
	if (key && strlen(key) > KEY_HEADER_MAX - 16)
		return errf(err, errlen, -E2BIG, "the API key is longer than %d bytes",
		            KEY_HEADER_MAX - 16);
	CURL *c = curl_easy_init();
	if (!c)
		return errf(err, errlen, -ENOMEM, "out of memory");
	char url[600], auth[KEY_HEADER_MAX];
	snprintf(url, sizeof(url), "http://localhost%s", q->path);
	struct curl_slist *h = NULL;
	int r = 0;
	if (key) {
		snprintf(auth, sizeof(auth), "X-API-KEY: %s", key);
		if (!(h = curl_slist_append(h, auth)))
			r = -ENOMEM;
	}
	for (const char *const *x = q->headers; r == 0 && x && *x; x++) {
		struct curl_slist *n = curl_slist_append(h, *x);
		if (!n)
			r = -ENOMEM;
		else
			h = n;
	}
	if (r < 0) {
		errf(err, errlen, r, "out of memory");
		goto out;
	}
	unsigned int ms = q->timeout_ms ? q->timeout_ms : CLI_COVED_CALL_MS;
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
	if (q->body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)q->len);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, q->body);
	}
	CURLcode cc = curl_easy_perform(c);
	if (cc != CURLE_OK)
		r = cc == CURLE_WRITE_ERROR
		        ? errf(err, errlen, -E2BIG, "coved's answer is over %u bytes",
		               CLI_COVED_ANSWER_MAX)
		        : unreachable(sock, cc, ms, err, errlen);
	else
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
out:
	explicit_bzero(auth, sizeof(auth));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return r;
}

int cli_coved_call(const char *sock, const char *key, const char *method, const char *path,
                   const char *body, long *status, struct cli_answer *a, char *err, size_t errlen)
{
	static const char *const json[] = { "Content-Type: application/json", NULL };
	struct cli_coved_req q = { .method = method,
		                   .path = path,
		                   .headers = json,
		                   .body = body,
		                   .len = body ? strlen(body) : 0 };
	return cli_coved_request(sock, key, &q, status, a, err, errlen);
}
