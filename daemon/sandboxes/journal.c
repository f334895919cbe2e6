/* coved's journal: one JSON line per event, per sandbox, in
 * <state_dir>/journal/<id>.jsonl (0600), chained by SHA-256 (journal.h).
 * A sandbox's appends are serialised by its tail's lock; the tail (the
 * last seq and hash) is read back from the file's end on first use, so a
 * restarted coved continues the chain.  Egress decisions are folded in
 * from the sandbox's egress.log before every append and every read, each
 * as one line {"type": "egress", "egress": {the decision}}; how far the
 * log was folded is kept in <id>.egress ("inode offset") beside it. */
#include "daemon/sandboxes/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cove.h"
#include "daemon/sandboxes/hourly.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"
#include "daemon/trace/tracer.h"
#include "lib/base/jchain.h"

#define EGRESS_LINE_MAX (64u << 10) /* longer decision lines are cut */
#define EGRESS_FOLD_MAX (4u << 20)  /* bytes folded per call, at most */

_Static_assert(sizeof(((struct coved_jtail *)0)->hash) == SHA256_HEX, "a hex SHA-256");

char *coved_journal_path(const struct coved *d, const char *id)
{
	char *p = NULL;
	if (asprintf(&p, "%s/journal/%s.jsonl", d->cfg.state_dir, id) < 0)
		return NULL;
	return p;
}

/* Counts the file's lines (a torn last line counts): for a tail without a
 * readable seq. */
static uint64_t count_lines(int fd)
{
	char buf[65536];
	uint64_t n = 0;
	off_t pos = 0;
	ssize_t k;
	char last = '\n';
	while ((k = pread(fd, buf, sizeof(buf), pos)) > 0) {
		for (ssize_t i = 0; i < k; i++)
			n += buf[i] == '\n';
		last = buf[k - 1];
		pos += k;
	}
	return n + (last != '\n');
}

/* Where the file's last line starts, the line being [start, stop). */
static off_t line_start(int fd, off_t stop)
{
	char buf[65536];
	for (off_t pos = stop; pos > 0;) {
		size_t n = pos < (off_t)sizeof(buf) ? (size_t)pos : sizeof(buf);
		if (pread(fd, buf, n, pos - (off_t)n) != (ssize_t)n)
			return 0;
		char *p = memrchr(buf, '\n', n);
		if (p)
			return pos - (off_t)n + (p - buf) + 1;
		pos -= (off_t)n;
	}
	return 0;
}

/* tail_load() - the last line's seq and hash from the journal's end.  A
 * torn last line (no newline: a write cut short) is ended with one, and
 * the chain goes on from it; the verifier names it.  Called with t->mu. */
static void tail_load(struct coved_sb *sb, struct coved_jtail *t)
{
	t->loaded = true;
	t->seq = 0;
	memset(t->hash, '0', SHA256_HEX - 1);
	t->hash[SHA256_HEX - 1] = 0;
	char *path = coved_journal_path(sb->d, sb->id);
	int fd = path ? open(path, O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW) : -1;
	free(path);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	char c = '\n';
	if (pread(fd, &c, 1, st.st_size - 1) != 1)
		c = '\n';
	off_t stop = c == '\n' ? st.st_size - 1 : st.st_size;
	off_t start = line_start(fd, stop);
	struct sha256 h;
	sha256_init(&h);
	char *head = malloc(JCHAIN_LINE_MAX);
	size_t head_len = 0;
	char buf[65536];
	for (off_t pos = start; pos < stop;) {
		size_t want = stop - pos < (off_t)sizeof(buf) ? (size_t)(stop - pos) : sizeof(buf);
		ssize_t k = pread(fd, buf, want, pos);
		if (k <= 0)
			break;
		sha256_update(&h, buf, (size_t)k);
		if (head && head_len + (size_t)k <= JCHAIN_LINE_MAX) {
			memcpy(head + head_len, buf, (size_t)k);
			head_len += (size_t)k;
		}
		pos += k;
	}
	uint8_t dg[SHA256_LEN];
	sha256_final(&h, dg);
	sha256_hex(dg, t->hash);
	uint64_t seq =
	    head && head_len == (size_t)(stop - start) ? jchain_tail_seq(head, head_len) : 0;
	free(head);
	t->seq = seq ? seq : count_lines(fd);
	if (c != '\n' && write(fd, "\n", 1) != 1)
		fprintf(stderr, "coved: journal of %s: cannot end its torn last line\n", sb->id);
	close(fd);
}

/* Writes one line (NUL-terminated in line, room for a newline after it)
 * to the journal.  Called with t->mu. */
static void append_line(struct coved_sb *sb, char *line, size_t n)
{
	char *path = coved_journal_path(sb->d, sb->id);
	if (!path)
		return;
	line[n] = '\n'; /* the NUL becomes the newline */
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		if (write(fd, line, n + 1) != (ssize_t)(n + 1))
			fprintf(stderr, "coved: journal %s: short write\n", path);
		close(fd);
	} else {
		fprintf(stderr, "coved: journal %s: %s\n", path, strerror(errno));
	}
	free(path);
}

/* The trace ids go into the line (daemon/trace/span.h): the request's
 * context when the calling thread serves one of the sandbox's tenant,
 * else the sandbox's own trace.  Called with t->mu. */
static void stamp(struct coved_sb *sb, json_t *o)
{
	trace_stamp(&sb->troot, trace_req_for(sb->tenant), sb->tenant, o);
	if (sb->troot.stamped && !sb->trace_id[0]) {
		char hex[TRACE_ID_HEX];
		trace_hex(sb->troot.trace_id, TRACE_ID_LEN, hex);
		pthread_mutex_lock(&sb->mu);
		memcpy(sb->trace_id, hex, sizeof(hex));
		pthread_mutex_unlock(&sb->mu);
	}
}

/* append_locked() - ev (stolen) as the next line of the chain, then as
 * spans to the tracer.  Called with t->mu, after tail_load. */
static void append_locked(struct coved_sb *sb, struct coved_jtail *t, json_t *ev)
{
	char ts[48];
	clock_rfc3339(wall_ms(), ts, sizeof(ts));
	json_t *o = json_pack("{s:I, s:s, s:s, s:s}", "seq", (json_int_t)(t->seq + 1), "prev",
	                      t->hash, "ts", ts, "sandbox", sb->id);
	if (!o || json_object_update_missing(o, ev) < 0) {
		json_decref(o);
		json_decref(ev);
		return;
	}
	json_decref(ev);
	stamp(sb, o);
	char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	size_t n = line ? strlen(line) : 0;
	if (n > JCHAIN_LINE_MAX) {
		/* The verifier refuses longer lines: say what was there instead. */
		json_t *type = NULL;
		json_t *p = json_loads(line, 0, NULL);
		type = json_object_get(p, "type");
		json_t *s =
		    json_pack("{s:I, s:s, s:s, s:s, s:O?, s:b, s:I}", "seq",
		              (json_int_t)(t->seq + 1), "prev", t->hash, "ts", ts, "sandbox",
		              sb->id, "type", type, "cut", 1, "bytes", (json_int_t)n);
		json_decref(p);
		free(line);
		line = s ? json_dumps(s, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
		json_decref(s);
		n = line ? strlen(line) : 0;
	}
	if (!line) {
		json_decref(o);
		return;
	}
	append_line(sb, line, n);
	t->seq++;
	jchain_hash(line, n, t->hash);
	free(line);
	pthread_cond_broadcast(&t->grew);
	tracer_line(sb->d->tracer, &sb->troot, o);
	coved_hourly_line(sb, o);
	json_decref(o);
}

/* ---- egress decisions ---------------------------------------------------- */

static char *egress_mark_path(struct coved_sb *sb)
{
	char *p = NULL;
	if (asprintf(&p, "%s/journal/%s.egress", sb->d->cfg.state_dir, sb->id) < 0)
		return NULL;
	return p;
}

static void egress_mark_load(struct coved_sb *sb, struct coved_jtail *t)
{
	t->egress_loaded = true;
	char *p = egress_mark_path(sb);
	FILE *f = p ? fopen(p, "re") : NULL;
	free(p);
	unsigned long long ino, off;
	if (f && fscanf(f, "%llu %llu", &ino, &off) == 2) {
		t->egress_ino = ino;
		t->egress_off = off;
	}
	if (f)
		fclose(f);
}

static void egress_mark_save(struct coved_sb *sb, struct coved_jtail *t)
{
	char *p = egress_mark_path(sb);
	int fd = p ? open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600) : -1;
	free(p);
	if (fd < 0)
		return;
	dprintf(fd, "%" PRIu64 " %" PRIu64 "\n", t->egress_ino, t->egress_off);
	close(fd);
}

/* One decision line as a journal line; a line that is no JSON object goes
 * in as a string (its bytes outside printable ASCII as '?'). */
static void egress_line(struct coved_sb *sb, struct coved_jtail *t, const char *b, size_t n)
{
	json_t *dec = n <= EGRESS_LINE_MAX ? json_loadb(b, n, 0, NULL) : NULL;
	if (!json_is_object(dec)) {
		json_decref(dec);
		size_t k = n < EGRESS_LINE_MAX ? n : EGRESS_LINE_MAX;
		char *s = malloc(k + 1);
		for (size_t i = 0; s && i < k; i++)
			s[i] = b[i] >= 0x20 && b[i] < 0x7f ? b[i] : '?';
		dec = s ? json_stringn(s, k) : NULL;
		free(s);
	}
	if (dec)
		append_locked(sb, t, json_pack("{s:s, s:o}", "type", "egress", "egress", dec));
}

/* fold_locked() - appends the egress.log lines past the mark.  A log of
 * another inode (a new one) or shorter than the mark (emptied) is read
 * from its start.  Called with t->mu. */
static void fold_locked(struct coved_sb *sb, struct coved_jtail *t)
{
	pthread_mutex_lock(&sb->mu);
	struct cove_sandbox *c = sb->state == COVED_SB_RUNNING ? sb->cove : NULL;
	pthread_mutex_unlock(&sb->mu);
	if (c && !t->egress_path)
		(void)!asprintf(&t->egress_path, "%s/egress.log", cove_sandbox_dir(c));
	if (!t->egress_path)
		return;
	if (!t->egress_loaded)
		egress_mark_load(sb, t);
	int fd = open(t->egress_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if ((uint64_t)st.st_ino != t->egress_ino || (uint64_t)st.st_size < t->egress_off) {
		t->egress_ino = (uint64_t)st.st_ino;
		t->egress_off = 0;
	}
	uint64_t before = t->egress_off;
	char *buf = malloc(EGRESS_LINE_MAX + 1);
	while (buf && t->egress_off < (uint64_t)st.st_size &&
	       t->egress_off - before < EGRESS_FOLD_MAX) {
		ssize_t k = pread(fd, buf, EGRESS_LINE_MAX + 1, (off_t)t->egress_off);
		if (k <= 0)
			break;
		char *nl = memchr(buf, '\n', (size_t)k);
		if (!nl && k <= (ssize_t)EGRESS_LINE_MAX)
			break; /* the last line is still being written */
		size_t len = nl ? (size_t)(nl - buf) : (size_t)k;
		egress_line(sb, t, buf, len);
		/* A line past the maximum: skip to its end. */
		t->egress_off += len + (nl ? 1 : 0);
	}
	free(buf);
	close(fd);
	if (t->egress_off != before)
		egress_mark_save(sb, t);
}

/* ---- the public calls ------------------------------------------------------ */

/* root_load() - the sandbox's span from the journal's first line (its
 * "created"), for a journal coved did not begin in this run.  Called with
 * t->mu. */
static void root_load(struct coved_sb *sb)
{
	char *path = coved_journal_path(sb->d, sb->id);
	FILE *f = path ? fopen(path, "re") : NULL;
	free(path);
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f);
	fclose(f);
	json_t *l =
	    n > 0 && (size_t)n <= JCHAIN_LINE_MAX ? json_loadb(line, (size_t)n, 0, NULL) : NULL;
	free(line);
	if (l && trace_root_load(&sb->troot, l) == 0) {
		char hex[TRACE_ID_HEX];
		trace_hex(sb->troot.trace_id, TRACE_ID_LEN, hex);
		pthread_mutex_lock(&sb->mu);
		memcpy(sb->trace_id, hex, sizeof(hex));
		pthread_mutex_unlock(&sb->mu);
	}
	json_decref(l);
}

static struct coved_jtail *lock_tail(struct coved_sb *sb)
{
	struct coved_jtail *t = &sb->jtail;
	pthread_mutex_lock(&t->mu);
	if (!t->loaded) {
		tail_load(sb, t);
		if (t->seq)
			root_load(sb);
	}
	return t;
}

void coved_journal(struct coved_sb *sb, json_t *ev)
{
	if (!sb || !json_is_object(ev)) {
		json_decref(ev);
		return;
	}
	struct coved_jtail *t = lock_tail(sb);
	fold_locked(sb, t);
	append_locked(sb, t, ev);
	pthread_mutex_unlock(&t->mu);
}

void coved_journal_fold(struct coved_sb *sb)
{
	struct coved_jtail *t = lock_tail(sb);
	fold_locked(sb, t);
	pthread_mutex_unlock(&t->mu);
}

void coved_journal_event(struct coved_sb *sb, const char *type, json_t *extra)
{
	json_t *ev = json_is_object(extra) ? extra : json_object();
	if (extra && !json_is_object(extra))
		json_decref(extra);
	json_object_set_new(ev, "type", json_string("lifecycle"));
	json_object_set_new(ev, "event", json_string(type));
	coved_journal(sb, ev);
}

void coved_journal_tail(struct coved_sb *sb, uint64_t *seq, char hash[SHA256_HEX])
{
	struct coved_jtail *t = lock_tail(sb);
	*seq = t->seq;
	memcpy(hash, t->hash, SHA256_HEX);
	pthread_mutex_unlock(&t->mu);
}

uint64_t coved_journal_wait(struct coved_sb *sb, uint64_t seq, int ms)
{
	struct coved_jtail *t = lock_tail(sb);
	struct timespec until = clock_after_ms(CLOCK_MONOTONIC, ms);
	while (t->seq <= seq) {
		if (pthread_cond_timedwait(&t->grew, &t->mu, &until) == ETIMEDOUT)
			break;
	}
	uint64_t now = t->seq;
	pthread_mutex_unlock(&t->mu);
	return now;
}
