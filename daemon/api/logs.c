/* The journal route (logs.h).  Pages and verdicts are read at once; a
 * follow is an MHD callback reader that sends the lines past its offset
 * and then waits on the journal (at most until the next keepalive, a
 * blank line every 15 s, which is also how a client that left is seen).
 * It ends when the sandbox is deleted or dead, once its last lines are
 * sent, or when coved stops. */
#include "daemon/api/logs.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "daemon/api/logs_query.h"
#include "daemon/http/reply.h"
#include "daemon/sandboxes/events.h"
#include "daemon/sandboxes/journal.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "daemon/trace/tracer.h"
#include "lib/base/jchain.h"

#define FOLLOW_KEEPALIVE_MS 15000
#define FOLLOW_SLICE_MS     1000 /* how often a waiting follow looks at the sandbox */
#define FOLLOW_BLOCK        65536

static int open_journal(struct coved *d, struct coved_sb *sb)
{
	char *path = coved_journal_path(d, coved_sb_id(sb));
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
	free(path);
	return fd;
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

static bool flag(struct MHD_Connection *c, const char *name)
{
	const char *v = arg(c, name);
	return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0);
}

/* ?verify=1: {whole, lines, seq} or {whole: false, lines, brokenLine,
 * reason}.  coved's own tail is the anchor: an edit of the last line, or
 * lines cut from the end, show too. */
static enum MHD_Result verify(struct coved *d, struct MHD_Connection *c, struct coved_sb *sb)
{
	struct jchain ch;
	jchain_start(&ch);
	coved_journal_fold(sb);
	coved_journal_tail(sb, &ch.anchor_seq, ch.anchor_hash);
	int fd = open_journal(d, sb);
	int rc = fd >= 0 ? jchain_verify_fd(&ch, fd) : jchain_finish(&ch);
	if (fd >= 0)
		close(fd);
	if (rc < -1)
		return coved_json_error(c, 500, "the journal cannot be read");
	json_t *o = json_pack("{s:b, s:I, s:I}", "whole", rc == 0, "lines", (json_int_t)ch.lines,
	                      "seq", (json_int_t)ch.seq);
	if (o && rc) {
		json_object_set_new(o, "brokenLine", json_integer((json_int_t)ch.bad));
		json_object_set_new(o, "reason", json_string(ch.why));
	}
	return coved_json_reply(c, 200, o);
}

/* One page: {entries, next} from line offset, at most limit lines. */
static enum MHD_Result page(struct coved *d, struct MHD_Connection *c, struct coved_sb *sb,
                            const struct coved_since *since, unsigned long offset,
                            unsigned long limit)
{
	coved_journal_fold(sb);
	int fd = open_journal(d, sb);
	FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (!f && fd >= 0)
		close(fd);
	json_t *entries = json_array();
	char *line = NULL;
	size_t cap = 0;
	ssize_t k;
	unsigned long n = 0;
	while (f && json_array_size(entries) < limit && (k = getline(&line, &cap, f)) > 0) {
		if (n++ < offset)
			continue;
		size_t len = line[k - 1] == '\n' ? (size_t)k - 1 : (size_t)k;
		if (since && !coved_since_keeps(since, line, len))
			continue;
		json_t *e = json_loadb(line, len, 0, NULL);
		json_array_append_new(entries, e ? e : json_stringn(line, len));
	}
	free(line);
	if (f)
		fclose(f);
	return coved_json_reply(c, 200,
	                        json_pack("{s:o, s:I}", "entries", entries, "next", (json_int_t)n));
}

struct follow {
	struct coved *d;
	struct coved_sb *sb; /* a reference of its own */
	int fd;
	uint64_t off; /* bytes of the file read */
	struct coved_since since;
	char *line; /* the line being read, or the bytes being sent */
	size_t len, sent;
	bool sending, done;
	int64_t next_keepalive;
};

/* Reads one whole line past f->off into f->line.  A line longer than any
 * coved writes (an edited file) is skipped to its newline.  Return: 1 a
 * line (newline included), 0 none yet. */
static int next_line(struct follow *f)
{
	char buf[FOLLOW_BLOCK];
	bool skipping = false;
	f->len = 0;
	for (;;) {
		ssize_t k = pread(f->fd, buf, sizeof(buf), (off_t)(f->off + f->len));
		if (k <= 0)
			return 0; /* the end, or a line still being written */
		char *nl = memchr(buf, '\n', (size_t)k);
		size_t take = nl ? (size_t)(nl - buf) + 1 : (size_t)k;
		if (skipping || f->len + take > JCHAIN_LINE_MAX + 1) {
			f->off += f->len + take; /* what was kept of it goes too */
			f->len = 0;
			skipping = !nl;
			continue;
		}
		memcpy(f->line + f->len, buf, take);
		f->len += take;
		if (nl) {
			f->off += f->len;
			return 1;
		}
	}
}

/* Fills f->line with what to send next, waiting at most until the next
 * keepalive.  Return: 0 something, -1 the end. */
static int follow_fill(struct follow *f)
{
	for (;;) {
		while (next_line(f))
			if (coved_since_keeps(&f->since, f->line, f->len - 1))
				return 0;
		if (f->done)
			return -1;
		int64_t now = mono_ms();
		if (now >= f->next_keepalive) {
			f->next_keepalive = now + FOLLOW_KEEPALIVE_MS;
			f->line[0] = '\n';
			f->len = 1;
			return 0;
		}
		uint64_t seq;
		char hash[SHA256_HEX];
		coved_journal_fold(f->sb);
		coved_journal_tail(f->sb, &seq, hash);
		/* One more look at the file after the sandbox went: its last lines. */
		if (coved_sb_gone(f->sb) || coved_events_closed(f->d)) {
			/* A deletion's last line follows its removal from the list. */
			coved_journal_wait(f->sb, seq, FOLLOW_SLICE_MS);
			f->done = true;
			continue;
		}
		int64_t left = f->next_keepalive - now;
		if (next_line(f)) {
			f->off -= f->len; /* read it again above */
			continue;
		}
		coved_journal_wait(f->sb, seq,
		                   left < FOLLOW_SLICE_MS ? (int)left : FOLLOW_SLICE_MS);
	}
}

static ssize_t follow_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct follow *f = cls;
	if (!f->sending) {
		if (follow_fill(f) < 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		f->sending = true;
		f->sent = 0;
	}
	size_t n = f->len - f->sent;
	if (n > max)
		n = max;
	memcpy(buf, f->line + f->sent, n);
	f->sent += n;
	if (f->sent == f->len)
		f->sending = false;
	return (ssize_t)n;
}

static void follow_free(void *cls)
{
	struct follow *f = cls;
	if (f->fd >= 0)
		close(f->fd);
	coved_sb_unref(f->sb);
	free(f->line);
	free(f);
}

/* ?follow=1: the lines (after since) as NDJSON, then new ones as they come. */
static enum MHD_Result follow(struct coved *d, struct MHD_Connection *c, struct coved_sb *sb,
                              const struct coved_since *since)
{
	struct follow *f = calloc(1, sizeof(*f));
	if (!f)
		return coved_json_error(c, 500, "out of memory");
	f->d = d;
	f->since = *since;
	f->sb = coved_sb_ref(sb);
	f->line = malloc(JCHAIN_LINE_MAX + 1);
	coved_journal_fold(sb);
	f->fd = open_journal(d, sb);
	if (f->fd < 0) {
		/* No line yet: the first append makes the file. */
		char *path = coved_journal_path(d, coved_sb_id(sb));
		f->fd = path ? open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
		free(path);
	}
	f->next_keepalive = mono_ms() + FOLLOW_KEEPALIVE_MS;
	if (f->fd < 0 || !f->line) {
		follow_free(f);
		return coved_json_error(c, 500, "the journal cannot be opened");
	}
	return coved_stream_reply(c, "application/x-ndjson", FOLLOW_BLOCK, follow_read, f,
	                          follow_free);
}

enum MHD_Result coved_logs_get(struct coved *d, struct MHD_Connection *c, struct coved_sb *sb)
{
	const char *off = arg(c, "offset"), *lim = arg(c, "limit"), *sv = arg(c, "since");
	unsigned long offset = 0, limit = 1000;
	char *end, msg[200];
	if (off && (offset = strtoul(off, &end, 10), *end || !*off))
		return coved_json_error(c, 400, "'offset' must be a line number");
	if (lim && (limit = strtoul(lim, &end, 10), *end || limit == 0 || limit > 10000))
		return coved_json_error(c, 400, "'limit' must be 1 to 10000");
	struct coved_since since = { .by_time = false, .seq = 0 };
	if (sv && coved_since_parse(sv, &since, msg, sizeof(msg)) < 0)
		return coved_json_error(c, 400, msg);
	if (flag(c, "verify"))
		return verify(d, c, sb);
	if (flag(c, "follow"))
		return follow(d, c, sb, &since);
	return page(d, c, sb, sv ? &since : NULL, offset, limit);
}

enum MHD_Result coved_logs_export(struct coved *d, struct MHD_Connection *c, struct coved_sb *sb,
                                  json_t *body)
{
	char *url = trace_traces_url(json_string_value(json_object_get(body, "endpoint")));
	if (!url)
		return coved_json_error(c, 400, "\"endpoint\" must be an http:// or https:// URL");
	char err[400];
	struct tracer_settings s;
	if (tracer_settings(&d->cfg, &s, err, sizeof(err)) < 0) {
		free(url);
		return coved_json_error(c, 500, err);
	}
	coved_journal_fold(sb);
	int fd = open_journal(d, sb);
	/* The caller's URL: no host or private address unless webhooks may
	 * reach them too (webhook_private_ok). */
	long sent = fd >= 0 ? trace_export_journal(fd, url, s.service, &s.headers,
	                                           !d->cfg.webhook_private_ok, err, sizeof(err))
	                    : (snprintf(err, sizeof(err), "the sandbox has no journal"), -1);
	if (fd >= 0)
		close(fd);
	tracer_settings_free(&s);
	free(url);
	if (sent < 0)
		return coved_json_error(c, fd >= 0 ? 502 : 404, err);
	return coved_json_reply(c, 200, json_pack("{s:I}", "spans", (json_int_t)sent));
}
