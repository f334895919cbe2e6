/* Webhooks (webhooks.h): the tenant's registrations under one lock, a
 * queue of deliveries and the worker thread that sends them with libcurl.
 * Each POST carries the event as its body and
 *   X-Cove-Timestamp: <Unix seconds>
 *   X-Cove-Signature: v1=<hex HMAC-SHA-256(secret, "<timestamp>.<body>")>
 * so a receiver checks who sent it and refuses an old timestamp (a
 * replay); a retry is signed again with its own time. */
#include "daemon/sandboxes/webhooks.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "common/errf.h"
#include "daemon/http/dial.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/sandboxes/webhook_req.h"
#include "netrule.h"

struct hook {
	char id[COVED_ID_LEN + 1];
	char tenant[COVED_TENANT_LEN + 1];
	struct coved_webhook_req r;
	int64_t created_ms;
	struct hook *next;
};

struct delivery {
	char hook[COVED_ID_LEN + 1];
	char *url, *secret, *body;
	char type[24];
	json_int_t event_id;
	int attempt;
	int64_t due; /* mono_ms() */
	struct delivery *next;
};

struct coved_webhooks {
	struct coved *d;
	pthread_mutex_t mu;
	pthread_cond_t cond; /* CLOCK_MONOTONIC: work queued, or stop */
	struct hook *hooks;
	struct delivery *queue;
	size_t queued;
	bool stop, started;
	pthread_t th;
	char *path; /* webhooks.json */
};

static void delivery_free(struct delivery *q)
{
	free(q->url);
	if (q->secret)
		explicit_bzero(q->secret, strlen(q->secret));
	free(q->secret);
	free(q->body);
	free(q);
}

static void hook_free(struct hook *h)
{
	coved_webhook_req_free(&h->r);
	free(h);
}

/* ---- registrations -------------------------------------------------------- */

static json_t *types_json(unsigned types)
{
	json_t *a = json_array();
	for (unsigned i = 0; coved_event_types[i]; i++)
		if (!types || types & (1u << i))
			json_array_append_new(a, json_string(coved_event_types[i]));
	return a;
}

/* What the API answers of a hook: never its secret. */
static json_t *hook_json(const struct hook *h)
{
	char ts[48];
	clock_rfc3339(h->created_ms, ts, sizeof(ts));
	return json_pack("{s:s, s:s, s:o, s:s}", "id", h->id, "url", h->r.url, "events",
	                 types_json(h->r.types), "createdAt", ts);
}

/* Writes every registration (with secrets: the file is 0600) to a new
 * file, then renames it over the old.  Called with w->mu. */
static int save(struct coved_webhooks *w)
{
	json_t *all = json_array();
	for (struct hook *h = w->hooks; h; h = h->next) {
		json_t *o = hook_json(h);
		json_object_set_new(o, "tenant", json_string(h->tenant));
		json_object_set_new(o, "secret", json_string(h->r.secret));
		json_object_set_new(o, "createdMs", json_integer(h->created_ms));
		json_array_append_new(all, o);
	}
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.new", w->path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	int rc = fd < 0 ? -errno : 0;
	if (fd >= 0) {
		rc = json_dumpfd(all, fd, JSON_COMPACT) == 0 && fsync(fd) == 0 ? 0 : -EIO;
		close(fd);
	}
	json_decref(all);
	if (rc == 0 && rename(tmp, w->path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

static void load(struct coved_webhooks *w)
{
	json_error_t je;
	json_t *all = json_load_file(w->path, JSON_REJECT_DUPLICATES, &je);
	size_t i;
	json_t *o;
	json_array_foreach(all, i, o)
	{
		struct hook *h = calloc(1, sizeof(*h));
		json_t *req =
		    json_pack("{s:O, s:O, s:O?}", "url", json_object_get(o, "url"), "secret",
		              json_object_get(o, "secret"), "events", json_object_get(o, "events"));
		const char *id = json_string_value(json_object_get(o, "id"));
		const char *tenant = json_string_value(json_object_get(o, "tenant"));
		char err[200];
		if (!h || !req || !id || !tenant || strlen(id) != COVED_ID_LEN ||
		    strlen(tenant) > COVED_TENANT_LEN ||
		    coved_webhook_parse(req, &h->r, err, sizeof(err)) < 0) {
			fprintf(stderr, "coved: %s: entry %zu is not a webhook: skipped\n", w->path,
			        i);
			free(h);
			json_decref(req);
			continue;
		}
		json_decref(req);
		snprintf(h->id, sizeof(h->id), "%s", id);
		snprintf(h->tenant, sizeof(h->tenant), "%s", tenant);
		h->created_ms = json_integer_value(json_object_get(o, "createdMs"));
		h->next = w->hooks;
		w->hooks = h;
	}
	json_decref(all);
}

int coved_webhook_add(struct coved_webhooks *w, const char *tenant, json_t *body, json_t **out,
                      char *msg, size_t len)
{
	if (!w)
		return errf(msg, len, 503, "webhooks are not running");
	struct hook *h = calloc(1, sizeof(*h));
	if (!h)
		return errf(msg, len, 500, "out of memory");
	if (coved_webhook_parse(body, &h->r, msg, len) < 0) {
		free(h);
		return 400;
	}
	if (coved_new_id(h->id) < 0) {
		hook_free(h);
		return errf(msg, len, 500, "no random id");
	}
	snprintf(h->tenant, sizeof(h->tenant), "%s", tenant);
	h->created_ms = wall_ms();
	pthread_mutex_lock(&w->mu);
	size_t n = 0;
	for (struct hook *o = w->hooks; o; o = o->next)
		n += strcmp(o->tenant, tenant) == 0;
	int st = 0;
	if (n >= COVED_WEBHOOKS_PER_TENANT) {
		st = errf(msg, len, 409, "a tenant has at most %d webhooks",
		          COVED_WEBHOOKS_PER_TENANT);
	} else {
		h->next = w->hooks;
		w->hooks = h;
		if (save(w) < 0) {
			w->hooks = h->next;
			st = errf(msg, len, 500, "the webhooks file cannot be written");
		}
	}
	if (!st)
		*out = hook_json(h);
	pthread_mutex_unlock(&w->mu);
	if (st)
		hook_free(h);
	return st;
}

json_t *coved_webhook_list(struct coved_webhooks *w, const char *tenant)
{
	json_t *a = json_array();
	if (!w)
		return a;
	pthread_mutex_lock(&w->mu);
	for (struct hook *h = w->hooks; h; h = h->next)
		if (strcmp(h->tenant, tenant) == 0)
			json_array_append_new(a, hook_json(h));
	pthread_mutex_unlock(&w->mu);
	return a;
}

int coved_webhook_delete(struct coved_webhooks *w, const char *tenant, const char *id, char *msg,
                         size_t len)
{
	if (!w)
		return errf(msg, len, 404, "webhook %.40s not found", id);
	pthread_mutex_lock(&w->mu);
	struct hook *gone = NULL;
	for (struct hook **p = &w->hooks; *p; p = &(*p)->next)
		if (strcmp((*p)->id, id) == 0 && strcmp((*p)->tenant, tenant) == 0) {
			gone = *p;
			*p = gone->next;
			break;
		}
	int st = gone ? 0 : errf(msg, len, 404, "webhook %.40s not found", id);
	if (gone && save(w) < 0)
		st = errf(msg, len, 500, "the webhooks file cannot be written");
	pthread_mutex_unlock(&w->mu);
	if (gone)
		hook_free(gone);
	return st;
}

/* ---- deliveries ------------------------------------------------------------ */

void coved_webhooks_post(struct coved_webhooks *w, const char *tenant, const char *type, json_t *ev)
{
	if (!w)
		return;
	unsigned bit = coved_event_bit(type);
	char *body = json_dumps(ev, JSON_COMPACT);
	if (!body)
		return;
	pthread_mutex_lock(&w->mu);
	for (struct hook *h = w->hooks; h; h = h->next) {
		if (strcmp(h->tenant, tenant) || (h->r.types && !(h->r.types & bit)))
			continue;
		struct delivery *q = calloc(1, sizeof(*q));
		if (!q)
			break;
		q->url = strdup(h->r.url);
		q->secret = strdup(h->r.secret);
		q->body = strdup(body);
		snprintf(q->hook, sizeof(q->hook), "%s", h->id);
		snprintf(q->type, sizeof(q->type), "%s", type);
		q->event_id = json_integer_value(json_object_get(ev, "id"));
		q->due = mono_ms();
		if (!q->url || !q->secret || !q->body) {
			delivery_free(q);
			break;
		}
		if (w->queued >= COVED_WEBHOOK_QUEUE) {
			/* Full: the oldest goes, and says so. */
			struct delivery *old = w->queue;
			w->queue = old->next;
			w->queued--;
			fprintf(stderr, "coved: webhook %s: queue full, event %lld dropped\n",
			        old->hook, (long long)old->event_id);
			delivery_free(old);
		}
		struct delivery **p = &w->queue;
		while (*p)
			p = &(*p)->next;
		*p = q;
		w->queued++;
	}
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	free(body);
}

static size_t discard(char *p, size_t size, size_t n, void *u)
{
	(void)p;
	(void)u;
	return size * n;
}

/* One POST.  Return: 0 when the receiver answered 2xx, else -1 with why. */
static int send_one(const struct delivery *q, bool private_ok, char *why, size_t len)
{
	int64_t ts = wall_ms() / 1000;
	char sig[COVED_WEBHOOK_SIG_LEN + 1], h[5][160];
	if (coved_webhook_sign(q->secret, ts, q->body, strlen(q->body), sig) < 0)
		return errf(why, len, -1, "no signature (out of memory)");
	snprintf(h[0], sizeof(h[0]), "%s: v1=%s", COVED_WEBHOOK_HEADER_SIG, sig);
	snprintf(h[1], sizeof(h[1]), "%s: %lld", COVED_WEBHOOK_HEADER_TS, (long long)ts);
	snprintf(h[2], sizeof(h[2]), "X-Cove-Event: %s", q->type);
	snprintf(h[3], sizeof(h[3]), "X-Cove-Delivery: %lld", (long long)q->event_id);
	snprintf(h[4], sizeof(h[4]), "X-Cove-Webhook: %s", q->hook);
	struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
	for (int i = 0; i < 5 && hl; i++)
		hl = curl_slist_append(hl, h[i]);
	CURL *e = curl_easy_init();
	if (!hl || !e) {
		curl_slist_free_all(hl);
		curl_easy_cleanup(e);
		return errf(why, len, -1, "out of memory");
	}
	char eb[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(e, CURLOPT_URL, q->url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, q->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(q->body));
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)COVED_WEBHOOK_TIMEOUT_MS);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, eb);
	struct coved_dial dl = { .private_ok = private_ok };
	coved_dial_limit(e, &dl);
	CURLcode r = curl_easy_perform(e);
	long status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(e);
	curl_slist_free_all(hl);
	if (r != CURLE_OK && dl.refused[0])
		return errf(why, len, -1,
		            "%s is a private or host address (coved's webhook_private_ok is false)",
		            dl.refused);
	if (r != CURLE_OK)
		return errf(why, len, -1, "%s", eb[0] ? eb : curl_easy_strerror(r));
	if (status < 200 || status > 299)
		return errf(why, len, -1, "the receiver answered %ld", status);
	return 0;
}

/* The earliest due delivery, unlinked, or NULL with *wait_ms until it is
 * due.  Called with w->mu. */
static struct delivery *take_due(struct coved_webhooks *w, int64_t *wait_ms)
{
	struct delivery **best = NULL;
	for (struct delivery **p = &w->queue; *p; p = &(*p)->next)
		if (!best || (*p)->due < (*best)->due)
			best = p;
	*wait_ms = 60000;
	if (!best)
		return NULL;
	int64_t now = mono_ms();
	if ((*best)->due > now) {
		*wait_ms = (*best)->due - now;
		return NULL;
	}
	struct delivery *q = *best;
	*best = q->next;
	w->queued--;
	return q;
}

static void *worker(void *arg)
{
	struct coved_webhooks *w = arg;
	pthread_mutex_lock(&w->mu);
	while (!w->stop) {
		int64_t wait_ms;
		struct delivery *q = take_due(w, &wait_ms);
		if (!q) {
			struct timespec until = clock_after_ms(CLOCK_MONOTONIC, wait_ms);
			pthread_cond_timedwait(&w->cond, &w->mu, &until);
			continue;
		}
		pthread_mutex_unlock(&w->mu);
		char why[300];
		int r = send_one(q, w->d->cfg.webhook_private_ok, why, sizeof(why));
		pthread_mutex_lock(&w->mu);
		if (r == 0 || ++q->attempt >= COVED_WEBHOOK_ATTEMPTS || w->stop) {
			if (r)
				fprintf(stderr, "coved: webhook %s: event %lld not delivered: %s\n",
				        q->hook, (long long)q->event_id, why);
			delivery_free(q);
			continue;
		}
		q->due = mono_ms() + (1000LL << (q->attempt - 1)); /* 1, 2, 4, 8, 16 s */
		q->next = w->queue;
		w->queue = q;
		w->queued++;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int coved_webhooks_start(struct coved *d, struct coved_webhooks **out, char *err, size_t errlen)
{
	struct coved_webhooks *w = calloc(1, sizeof(*w));
	if (!w || asprintf(&w->path, "%s/webhooks.json", d->cfg.state_dir) < 0) {
		free(w);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	w->d = d;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &a);
	pthread_condattr_destroy(&a);
	curl_global_init(CURL_GLOBAL_DEFAULT); /* before coved starts its other threads */
	load(w);
	if (pthread_create(&w->th, NULL, worker, w) != 0) {
		coved_webhooks_stop(w);
		return errf(err, errlen, -EAGAIN, "cannot start the webhooks' thread");
	}
	w->started = true;
	*out = w;
	return 0;
}

void coved_webhooks_stop(struct coved_webhooks *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	if (w->started)
		pthread_join(w->th, NULL);
	while (w->queue) {
		struct delivery *q = w->queue;
		w->queue = q->next;
		delivery_free(q);
	}
	while (w->hooks) {
		struct hook *h = w->hooks;
		w->hooks = h->next;
		hook_free(h);
	}
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cond);
	free(w->path);
	free(w);
}
