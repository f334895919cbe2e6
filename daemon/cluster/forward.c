/* Requests forwarded to their sandbox's owner node (forward.h).  A
 * streaming forward is two bounded rings between two threads: the
 * connection's (libmicrohttpd) pushes the upload into f->up and drains
 * the answer from f->down; a curl worker thread runs the transfer, its
 * read callback taking from f->up and its write callback filling f->down.
 * One mutex and one condition guard both; every wait is a slice of the
 * idle deadline (the last byte moved either way, f->last_ms), and the
 * connection's side also looks for a client that hung up. */
#include "daemon/cluster/forward.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/cluster/fwd_http.h"
#include "daemon/cluster/fwd_pool.h"
#include "daemon/http/reply.h"
#include "errf.h"

#define HEAD_MAX      (64 * 1024) /* the owner's answer head, its header lines */
#define HEAD_LINES    128
#define SLICE_MS      200 /* how often a connection-side wait looks at the client */
#define BLOCK_SIZE    (32 * 1024)
#define WHOLE_WAIT_MS 500 /* fwd_close's wait for a whole answer's transfer to end */

struct ring {
	char *buf;
	size_t head, len;
};

struct fwd {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool started;
	int refs;              /* the caller's, and the queued answer body's */
	struct fwd_conn *conn; /* the curl handle, kept or new (fwd_pool.h) */
	struct curl_slist *hdrs;
	char *url, *base;
	unsigned idle_ms;
	int client_fd;
	struct ring up, down;
	bool up_end;       /* the client's upload is whole */
	bool done, cancel; /* the transfer has ended; or is to end */
	bool head, queued; /* the owner's head is in; the answer is queued */
	bool timed_out;    /* a wait on this side passed the idle deadline */
	bool gone;         /* the client hung up */
	CURLcode res;
	long status;
	int64_t clen; /* the owner's Content-Length; < 0: none, or chunked */
	uint64_t got; /* the answer's body bytes in from the owner */
	int64_t last_ms;
	size_t peak;
	char *lines; /* the owner's header lines, each "name\0value\0" */
	size_t lines_len;
	unsigned nlines;
	char errbuf[CURL_ERROR_SIZE];
};

static size_t ring_put(struct ring *r, const char *p, size_t n)
{
	size_t done = 0;
	while (done < n && r->len < FWD_BUFFER) {
		size_t tail = (r->head + r->len) % FWD_BUFFER;
		size_t room = tail >= r->head ? FWD_BUFFER - tail : r->head - tail;
		size_t k = n - done < room ? n - done : room;
		memcpy(r->buf + tail, p + done, k);
		r->len += k;
		done += k;
	}
	return done;
}

static size_t ring_get(struct ring *r, char *p, size_t n)
{
	size_t done = 0;
	while (done < n && r->len) {
		size_t run = FWD_BUFFER - r->head < r->len ? FWD_BUFFER - r->head : r->len;
		size_t k = n - done < run ? n - done : run;
		memcpy(p + done, r->buf + r->head, k);
		r->head = (r->head + k) % FWD_BUFFER;
		r->len -= k;
		done += k;
	}
	return done;
}

/* moved() - a byte went either way (f->mu held): the idle clock restarts
 * and the other side may go on. */
static void moved(struct fwd *f)
{
	f->last_ms = mono_ms();
	if (f->up.len + f->down.len > f->peak)
		f->peak = f->up.len + f->down.len;
	pthread_cond_broadcast(&f->cv);
}

/* cancel_locked() - the transfer is to end now (f->mu held): a shut
 * down socket wakes curl out of any wait on the owner. */
static void cancel_locked(struct fwd *f)
{
	f->cancel = true;
	if (f->conn)
		fwd_conn_cancel(f->conn);
	pthread_cond_broadcast(&f->cv);
}

/* client_gone() - whether the client closed its end: its socket reads
 * the end of the stream (a pipelined request is data, not an end). */
static bool client_gone(const struct fwd *f)
{
	if (f->client_fd < 0)
		return false;
	struct pollfd p = { .fd = f->client_fd, .events = POLLIN | POLLRDHUP };
	if (poll(&p, 1, 0) <= 0)
		return false;
	if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
		return true;
	char b;
	return recv(f->client_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

/* wait_slice() - one wait on f->cv (f->mu held), at most until the idle
 * deadline and, on the client's side, SLICE_MS.
 * Return: 0 (look again), -ETIMEDOUT, or -EPIPE (the client is gone). */
static int wait_slice(struct fwd *f, bool client_side)
{
	int64_t now = mono_ms(), end = f->last_ms + f->idle_ms;
	if (now >= end)
		return -ETIMEDOUT;
	if (client_side && client_gone(f))
		return -EPIPE;
	int64_t ms = end - now;
	if (client_side && ms > SLICE_MS)
		ms = SLICE_MS;
	struct timespec ts = clock_after_ms(CLOCK_MONOTONIC, ms);
	pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	return 0;
}

/* ---- the curl worker's side ---------------------------------------------- */

static size_t on_upload(char *buf, size_t size, size_t nitems, void *cls)
{
	struct fwd *f = cls;
	size_t n = 0;
	pthread_mutex_lock(&f->mu);
	while (!f->up.len && !f->up_end && !f->cancel)
		if (wait_slice(f, false) < 0)
			break;
	if (f->up.len && !f->cancel) {
		n = ring_get(&f->up, buf, size * nitems);
		moved(f);
	} else if (!f->up_end || f->cancel) {
		n = CURL_READFUNC_ABORT;
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

static size_t on_download(char *p, size_t size, size_t nmemb, void *cls)
{
	struct fwd *f = cls;
	size_t n = size * nmemb, done = 0;
	pthread_mutex_lock(&f->mu);
	while (!f->cancel) {
		size_t k = ring_put(&f->down, p + done, n - done);
		done += k;
		f->got += k;
		if (k)
			moved(f);
		if (done == n || wait_slice(f, false) < 0)
			break;
	}
	pthread_mutex_unlock(&f->mu);
	return done == n ? n : 0;
}

/* head_line() - one line of the owner's head (f->mu held): a status line
 * starts the head again (after a 1xx), the blank line ends a final one.
 * Return: false when the head is not HTTP or too big (the transfer ends). */
static bool head_line(struct fwd *f, const char *s, size_t n)
{
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	if (n >= 5 && memcmp(s, "HTTP/", 5) == 0) {
		const char *sp = memchr(s, ' ', n);
		long st = sp ? fwd_parse_status(sp + 1, n - (size_t)(sp + 1 - s)) : -1;
		if (st < 0)
			return false;
		f->status = st;
		f->got = 0;
		f->lines_len = f->nlines = 0;
		f->clen = -1;
		return true;
	}
	if (n == 0) {
		if (f->status < 100)
			return false;
		if (f->status >= 200) {
			f->head = true;
			pthread_cond_broadcast(&f->cv);
		}
		return true;
	}
	if (s[0] == ' ' || s[0] == '\t')
		return true; /* an obsolete folded line: dropped */
	const char *colon = memchr(s, ':', n);
	if (!colon || colon == s || f->nlines >= HEAD_LINES || n + 2 > HEAD_MAX - f->lines_len)
		return false;
	size_t nl = (size_t)(colon - s);
	const char *v = colon + 1, *end = s + n;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	char *o = f->lines + f->lines_len;
	memcpy(o, s, nl);
	o[nl] = '\0';
	memcpy(o + nl + 1, v, (size_t)(end - v));
	o[nl + 1 + (size_t)(end - v)] = '\0';
	f->lines_len += nl + 1 + (size_t)(end - v) + 1;
	f->nlines++;
	if (fwd_name_is(s, nl, "Content-Length") && f->clen != -2)
		f->clen = fwd_parse_length(o + nl + 1);
	else if (fwd_name_is(s, nl, "Transfer-Encoding"))
		f->clen = -2; /* chunked: no length, whatever else was said */
	return true;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *cls)
{
	struct fwd *f = cls;
	size_t n = size * nmemb;
	pthread_mutex_lock(&f->mu);
	/* Trailers after the head are not passed on. */
	bool ok = f->head || head_line(f, p, n);
	if (ok)
		moved(f);
	pthread_mutex_unlock(&f->mu);
	return ok ? n : 0;
}

static int on_progress(void *cls, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	struct fwd *f = cls;
	pthread_mutex_lock(&f->mu);
	bool stop = f->cancel;
	pthread_mutex_unlock(&f->mu);
	return stop;
}

static void *worker(void *cls)
{
	struct fwd *f = cls;
	CURLcode rc = curl_easy_perform(fwd_conn_easy(f->conn));
	pthread_mutex_lock(&f->mu);
	f->res = rc;
	f->done = true;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* ---- the connection's side ----------------------------------------------- */

static void fwd_unref(struct fwd *f)
{
	pthread_mutex_lock(&f->mu);
	bool last = --f->refs == 0;
	pthread_mutex_unlock(&f->mu);
	if (!last)
		return;
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f->up.buf);
	free(f->down.buf);
	free(f->lines);
	free(f->url);
	free(f->base);
	free(f);
}

/* The answer's body, read by the connection's thread. */
static ssize_t on_body(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct fwd *f = cls;
	ssize_t n = MHD_CONTENT_READER_END_WITH_ERROR;
	pthread_mutex_lock(&f->mu);
	while (!f->down.len && !f->done && !f->cancel)
		if (wait_slice(f, true) < 0) {
			cancel_locked(f);
			break;
		}
	if (f->down.len && !f->cancel) {
		n = (ssize_t)ring_get(&f->down, buf, max);
		moved(f);
	} else if (f->done && f->res == CURLE_OK && !f->cancel) {
		n = MHD_CONTENT_READER_END_OF_STREAM;
	}
	pthread_mutex_unlock(&f->mu);
	return n;
}

static void on_body_free(void *cls)
{
	fwd_unref(cls);
}

static int setup_easy(struct fwd *f, struct MHD_Connection *c, const char *method,
                      const struct fwd_target *t)
{
	CURL *e = fwd_conn_easy(f->conn);
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
	int r = fwd_easy_common(e, t, f->url, f->hdrs, f->errbuf);
	if (r < 0)
		return r;
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
	if (cl || te) {
		int64_t len = cl ? fwd_parse_length(cl) : -1;
		if (cl && len < 0)
			return -EINVAL;
		curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
		curl_easy_setopt(e, CURLOPT_READFUNCTION, on_upload);
		curl_easy_setopt(e, CURLOPT_READDATA, f);
	} else {
		f->up_end = true;
	}
	unsigned idle_s = (t->idle_timeout_ms + 999) / 1000;
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)idle_s);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_download);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, f);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, f);
	return 0;
}

static struct fwd *fwd_new(const struct fwd_target *t)
{
	struct fwd *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, &ca);
	pthread_condattr_destroy(&ca);
	f->refs = 1;
	f->client_fd = -1;
	f->clen = -1;
	f->idle_ms = t->idle_timeout_ms;
	f->up.buf = malloc(FWD_BUFFER);
	f->down.buf = malloc(FWD_BUFFER);
	f->lines = malloc(HEAD_MAX);
	f->base = strdup(t->base);
	f->conn = fwd_conn_get(t->base);
	if (f->up.buf && f->down.buf && f->lines && f->base && f->conn)
		return f;
	fwd_close(f);
	return NULL;
}

struct fwd *fwd_open(struct MHD_Connection *c, const char *method, const char *url,
                     const struct fwd_target *t, char *err, size_t errlen)
{
	if (fwd_check_target(t, err, errlen) < 0)
		return NULL;
	struct fwd *f = fwd_new(t);
	if (!f) {
		errf(err, errlen, -ENOMEM, "out of memory forwarding to %s", t->base);
		return NULL;
	}
	int r = fwd_request_url(c, t->base, url, NULL, &f->url);
	if (r == 0)
		r = fwd_request_headers(c, t, &f->hdrs);
	if (r == 0)
		r = setup_easy(f, c, method, t);
	if (r < 0) {
		errf(err, errlen, r, "cannot forward %s %s to %s: %s", method, url, t->base,
		     r == -ENOMEM ? "out of memory" : "bad request");
		fwd_close(f);
		return NULL;
	}
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	f->client_fd = ci ? ci->connect_fd : -1;
	f->last_ms = mono_ms();
	if (pthread_create(&f->thread, NULL, worker, f) != 0) {
		errf(err, errlen, -EAGAIN, "no thread to forward to %s", t->base);
		fwd_close(f);
		return NULL;
	}
	f->started = true;
	return f;
}

/* push() - an upload chunk into f->up, waiting while it is full.  Once
 * the transfer has ended or failed the rest is dropped. */
static void push(struct fwd *f, const char *data, size_t n)
{
	pthread_mutex_lock(&f->mu);
	while (n && !f->done && !f->cancel) {
		size_t k = ring_put(&f->up, data, n);
		data += k;
		n -= k;
		if (k)
			moved(f);
		int r = n ? wait_slice(f, true) : 0;
		if (r < 0) {
			f->timed_out = r == -ETIMEDOUT;
			f->gone = r == -EPIPE;
			cancel_locked(f);
		}
	}
	pthread_mutex_unlock(&f->mu);
}

/* fail() - the answer when the owner gave no head: 504 when it was
 * reached but silent past the deadline, else 502.  done: the worker had
 * ended (its result and error may be read). */
static enum MHD_Result fail(struct fwd *f, struct MHD_Connection *c, bool done)
{
	char msg[CURL_ERROR_SIZE + 256];
	long connected = 0;
	if (done)
		curl_easy_getinfo(fwd_conn_easy(f->conn), CURLINFO_CONNECT_TIME_T, &connected);
	bool late = f->timed_out || (done && f->res == CURLE_OPERATION_TIMEDOUT && connected);
	if (late) {
		snprintf(msg, sizeof(msg), "node %s did not answer within %u ms", f->base,
		         f->idle_ms);
		return coved_json_error(c, 504, msg);
	}
	snprintf(msg, sizeof(msg), "node %s cannot be reached: %s", f->base,
	         !done          ? "cancelled"
	         : f->errbuf[0] ? f->errbuf
	                        : curl_easy_strerror(f->res));
	return coved_json_error(c, 502, msg);
}

/* answer() - queues the owner's head and a body that streams from f->down. */
static enum MHD_Result answer(struct fwd *f, struct MHD_Connection *c)
{
	bool empty = f->status == 204 || f->status == 304;
	uint64_t size = empty ? 0 : f->clen >= 0 ? (uint64_t)f->clen : MHD_SIZE_UNKNOWN;
	struct MHD_Response *r =
	    empty ? MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT)
	          : MHD_create_response_from_callback(size, BLOCK_SIZE, on_body, f, on_body_free);
	if (!r)
		return MHD_NO;
	if (!empty) {
		pthread_mutex_lock(&f->mu);
		f->refs++;
		pthread_mutex_unlock(&f->mu);
	}
	const char *p = f->lines;
	for (unsigned i = 0; i < f->nlines; i++) {
		const char *v = p + strlen(p) + 1;
		/* One that libmicrohttpd refuses is left out. */
		if (fwd_pass_back(p))
			MHD_add_response_header(r, p, v);
		p = v + strlen(v) + 1;
	}
	f->queued = true;
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)f->status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result fwd_feed(struct fwd *f, struct MHD_Connection *c, const char *data, size_t *size)
{
	if (f->queued)
		return MHD_YES;
	if (*size) {
		push(f, data, *size);
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&f->mu);
	f->up_end = true;
	pthread_cond_broadcast(&f->cv);
	while (!f->head && !f->done && !f->cancel) {
		int r = wait_slice(f, true);
		if (r < 0) {
			f->timed_out = r == -ETIMEDOUT;
			f->gone = r == -EPIPE;
			cancel_locked(f);
		}
	}
	bool head = f->head && !f->cancel, done = f->done, gone = f->gone;
	pthread_mutex_unlock(&f->mu);
	if (gone)
		return MHD_NO; /* no one to answer */
	return head ? answer(f, c) : fail(f, c, done);
}

/* whole_locked() - the owner's whole answer is in (f->mu held). */
static bool whole_locked(const struct fwd *f)
{
	if (!f->head)
		return false;
	if (f->status == 204 || f->status == 304)
		return true;
	return f->clen >= 0 && f->got == (uint64_t)f->clen;
}

void fwd_close(struct fwd *f)
{
	if (!f)
		return;
	/* A transfer that ended cleanly leaves its connection to the next.
	 * An answer of known length may be sent whole before curl returns:
	 * the worker is given a moment to see the end. */
	pthread_mutex_lock(&f->mu);
	int64_t end = mono_ms() + WHOLE_WAIT_MS;
	while (!f->done && !f->cancel && whole_locked(f) && mono_ms() < end) {
		struct timespec ts = clock_after_ms(CLOCK_MONOTONIC, WHOLE_WAIT_MS);
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	bool clean = f->started && f->done && f->res == CURLE_OK && !f->cancel;
	if (!f->done)
		cancel_locked(f);
	pthread_mutex_unlock(&f->mu);
	if (f->started)
		pthread_join(f->thread, NULL);
	fwd_conn_put(f->conn, clean);
	f->conn = NULL;
	curl_slist_free_all(f->hdrs);
	f->hdrs = NULL;
	fwd_unref(f);
}

size_t fwd_peak(const struct fwd *f)
{
	struct fwd *m = (struct fwd *)f;
	pthread_mutex_lock(&m->mu);
	size_t n = m->peak;
	pthread_mutex_unlock(&m->mu);
	return n;
}
