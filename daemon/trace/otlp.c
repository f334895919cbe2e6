/* The OTLP/HTTP exporter (otlp.h): a ring of spans under one lock, one
 * thread that drains it.  The thread holds no lock while it talks to the
 * collector, so enqueue costs a lock and a store whatever the collector
 * does. */
#include "daemon/trace/otlp.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "daemon/http/dial.h"
#include "daemon/trace/span.h"
#include "netrule.h"

#define ANSWER_MAX (64 << 10) /* what is read of the collector's answer */

struct otlp {
	char *url, *service;
	struct curl_slist *hdrs;
	size_t cap, batch_max;
	int interval_ms, connect_ms, timeout_ms;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t more;
	json_t **ring; /* cap slots, [head, head + n) */
	size_t head, n;
	bool stopping;
	uint64_t exported, dropped, errors;
	bool failing; /* the last export failed: said once, and once when it recovers */
};

static size_t discard(char *p, size_t size, size_t n, void *cls)
{
	(void)p;
	size_t *seen = cls;
	*seen += size * n;
	return *seen > ANSWER_MAX ? 0 : size * n;
}

static struct curl_slist *headers_list(const struct trace_headers *h)
{
	struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/json");
	for (size_t i = 0; l && h && i < h->n; i++) {
		struct curl_slist *m = curl_slist_append(l, h->line[i]);
		if (!m) {
			curl_slist_free_all(l);
			return NULL;
		}
		l = m;
	}
	return l;
}

/* post() - one POST of @body.  Return: 0, or -1 with @err (curl's words
 * or the HTTP status; never the headers). */
static int post(CURL *c, const char *url, struct curl_slist *hdrs, const char *body, int connect_ms,
                int timeout_ms, char *err, size_t errlen)
{
	char cerr[CURL_ERROR_SIZE] = "";
	size_t seen = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &seen);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	CURLcode rc = curl_easy_perform(c);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK) {
		snprintf(err, errlen, "%s", cerr[0] ? cerr : curl_easy_strerror(rc));
		return -1;
	}
	if (status < 200 || status > 299) {
		snprintf(err, errlen, "the collector answered HTTP %ld", status);
		return -1;
	}
	return 0;
}

/* Sends @spans (stolen) on @c: 0 or -1 with @err. */
static int send_spans(CURL *c, const char *url, const char *service, struct curl_slist *hdrs,
                      json_t *spans, int connect_ms, int timeout_ms, char *err, size_t errlen)
{
	json_t *env = trace_envelope(service, spans);
	char *body = env ? json_dumps(env, JSON_COMPACT) : NULL;
	json_decref(env);
	if (!body) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int r = post(c, url, hdrs, body, connect_ms, timeout_ms, err, errlen);
	free(body);
	return r;
}

static void *run(void *arg)
{
	struct otlp *e = arg;
	CURL *c = curl_easy_init();
	pthread_mutex_lock(&e->mu);
	for (;;) {
		/* Wait for a full batch, the interval, or the end. */
		struct timespec until = clock_after_ms(CLOCK_MONOTONIC, e->interval_ms);
		while (!e->stopping && e->n < e->batch_max)
			if (pthread_cond_timedwait(&e->more, &e->mu, &until) == ETIMEDOUT)
				break;
		if (e->n == 0) {
			if (e->stopping)
				break;
			continue;
		}
		size_t k = e->n < e->batch_max ? e->n : e->batch_max;
		json_t *spans = json_array();
		for (size_t i = 0; i < k; i++) {
			json_t *s = e->ring[(e->head + i) % e->cap];
			if (spans)
				json_array_append_new(spans, s);
			else
				json_decref(s);
		}
		e->head = (e->head + k) % e->cap;
		e->n -= k;
		bool stopping = e->stopping;
		pthread_mutex_unlock(&e->mu);
		char err[CURL_ERROR_SIZE + 64] = "out of memory";
		int r = c && spans
		            ? send_spans(c, e->url, e->service, e->hdrs, spans, e->connect_ms,
		                         stopping ? e->connect_ms : e->timeout_ms, err, sizeof(err))
		            : (json_decref(spans), -1);
		pthread_mutex_lock(&e->mu);
		if (r == 0) {
			e->exported += k;
			if (e->failing)
				fprintf(stderr, "coved: traces: the collector takes spans again\n");
			e->failing = false;
		} else {
			e->errors++;
			e->dropped += k;
			if (!e->failing)
				fprintf(stderr,
				        "coved: traces: export failed (%s); spans are dropped and "
				        "counted until it works\n",
				        err);
			e->failing = true;
		}
	}
	pthread_mutex_unlock(&e->mu);
	if (c)
		curl_easy_cleanup(c);
	return NULL;
}

/* What an exporter holds besides its queued spans and its thread. */
static void exporter_free(struct otlp *e)
{
	curl_slist_free_all(e->hdrs);
	free(e->ring);
	free(e->url);
	free(e->service);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->more);
	free(e);
}

struct otlp *otlp_start(const struct otlp_config *cfg, char *err, size_t errlen)
{
	struct otlp *e = calloc(1, sizeof(*e));
	if (!e) {
		snprintf(err, errlen, "traces: out of memory");
		return NULL;
	}
	e->cap = cfg->queue_max ? cfg->queue_max : 2048;
	e->batch_max = cfg->batch_max ? cfg->batch_max : 512;
	if (e->batch_max > e->cap)
		e->batch_max = e->cap;
	e->interval_ms = cfg->interval_ms > 0 ? cfg->interval_ms : 500;
	e->connect_ms = cfg->connect_ms > 0 ? cfg->connect_ms : 1000;
	e->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 3000;
	e->url = strdup(cfg->url);
	e->service = strdup(cfg->service ? cfg->service : "coved");
	e->hdrs = headers_list(cfg->headers);
	e->ring = calloc(e->cap, sizeof(*e->ring));
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->more, &ca);
	pthread_condattr_destroy(&ca);
	if (!e->url || !e->service || !e->hdrs || !e->ring) {
		snprintf(err, errlen, "traces: out of memory");
		goto fail;
	}
	int r = pthread_create(&e->thread, NULL, run, e);
	if (r) {
		snprintf(err, errlen, "traces: cannot start the export thread: %s", strerror(r));
		goto fail;
	}
	return e;
fail:
	exporter_free(e);
	return NULL;
}

bool otlp_enqueue(struct otlp *e, json_t *span)
{
	if (!span)
		return false;
	pthread_mutex_lock(&e->mu);
	bool ok = !e->stopping && e->n < e->cap;
	if (ok) {
		e->ring[(e->head + e->n) % e->cap] = span;
		e->n++;
		if (e->n >= e->batch_max)
			pthread_cond_signal(&e->more);
	} else {
		e->dropped++;
	}
	pthread_mutex_unlock(&e->mu);
	if (!ok)
		json_decref(span);
	return ok;
}

void otlp_counts(struct otlp *e, struct otlp_counts *out)
{
	pthread_mutex_lock(&e->mu);
	*out = (struct otlp_counts){
		.exported = e->exported, .dropped = e->dropped, .errors = e->errors, .queued = e->n
	};
	pthread_mutex_unlock(&e->mu);
}

void otlp_stop(struct otlp *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->mu);
	e->stopping = true;
	pthread_cond_signal(&e->more);
	pthread_mutex_unlock(&e->mu);
	pthread_join(e->thread, NULL);
	for (size_t i = 0; i < e->n; i++)
		json_decref(e->ring[(e->head + i) % e->cap]);
	exporter_free(e);
}

int otlp_post(const char *url, const char *service, const struct trace_headers *h, json_t *spans,
              int timeout_ms, bool public_only, char *err, size_t errlen)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hdrs = headers_list(h);
	char e[CURL_ERROR_SIZE + 64] = "out of memory";
	struct coved_dial dl = { .private_ok = false };
	if (c && public_only)
		coved_dial_limit(c, &dl);
	int r = c && hdrs
	            ? send_spans(c, url, service, hdrs, spans, timeout_ms, timeout_ms, e, sizeof(e))
	            : (json_decref(spans), -1);
	if (r < 0 && dl.refused[0])
		snprintf(err, errlen,
		         "OTLP export: %s is a private or host address (coved's webhook_private_ok "
		         "is false)",
		         dl.refused);
	else if (r < 0)
		snprintf(err, errlen, "OTLP export: %s", e);
	curl_slist_free_all(hdrs);
	if (c)
		curl_easy_cleanup(c);
	return r;
}
