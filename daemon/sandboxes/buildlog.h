/* A template build's log (buildlog.c): timestamped lines, bounded.  The
 * steps' output comes in chunks and is cut into lines (one over
 * COVED_BLOG_LINE_MAX is cut there); once the lines hold more than the
 * cap, the oldest lines after the first quarter go, and readers see one
 * marker line in their place.  Every line has a sequence number, which
 * E2B's logsOffset counts.  Not locked: the caller holds its build's. */
#ifndef COVED_SANDBOXES_BUILDLOG_H
#define COVED_SANDBOXES_BUILDLOG_H

#include <stddef.h>
#include <stdint.h>

#define COVED_BLOG_LINE_MAX 4096

enum coved_blog_level { COVED_BLOG_INFO, COVED_BLOG_WARN, COVED_BLOG_ERROR };

struct coved_blog_line {
	uint64_t seq;
	int64_t ms; /* Unix milliseconds */
	enum coved_blog_level level;
	char *text; /* valid UTF-8, no control characters but tab */
};

struct coved_blog {
	struct coved_blog_line *v;
	size_t n, cap;
	size_t bytes, max_bytes; /* of the texts kept, and their bound */
	size_t head;             /* lines at the front that never go */
	uint64_t next_seq;
	uint64_t dropped;
	char part[2][COVED_BLOG_LINE_MAX]; /* stdout's and stderr's unfinished line */
	size_t partn[2];
};

/* coved_blog_init() - an empty log that keeps about max_bytes of text. */
void coved_blog_init(struct coved_blog *l, size_t max_bytes);
void coved_blog_free(struct coved_blog *l);

/* coved_blog_add() - one line of len bytes (cut at COVED_BLOG_LINE_MAX;
 * a line break inside ends it there). */
void coved_blog_add(struct coved_blog *l, int64_t ms, enum coved_blog_level level, const char *text,
                    size_t len);

/* coved_blog_limit() - bounds the log to max bytes from now on, at once:
 * the first quarter and the newest lines stay, one gap between them (a
 * finished build's log shrinks so). */
void coved_blog_limit(struct coved_blog *l, size_t max);

/* coved_blog_output() - a chunk of a step's stdout (stream 0) or stderr
 * (1): its whole lines are added, the rest kept for the next chunk. */
void coved_blog_output(struct coved_blog *l, int64_t ms, int stream, const char *buf, size_t len);
/* coved_blog_flush() - adds what is left of unfinished lines. */
void coved_blog_flush(struct coved_blog *l, int64_t ms);

/* coved_blog_read() - calls fn for up to max lines whose sequence number
 * is at least from, in order; a line stands for the dropped ones where
 * they were ("... N lines dropped ...", its seq that of the first).
 * Return: the sequence number after the last line given (from when none). */
uint64_t coved_blog_read(const struct coved_blog *l, uint64_t from, size_t max,
                         void (*fn)(void *opaque, const struct coved_blog_line *line),
                         void *opaque);

#endif
