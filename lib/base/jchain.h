/* The hash chain of coved's journal (docs/daemon.md): every line is a JSON
 * object whose "seq" counts lines from 1 and whose "prev" is the hex
 * SHA-256 of the line before it (its bytes without the newline; 64 zeros
 * for the first line).  A changed, removed or inserted line breaks the
 * chain at that line.  Pure: the bytes in, a verdict out. */
#ifndef COVE_JCHAIN_H
#define COVE_JCHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/sha256.h"

#define JCHAIN_LINE_MAX (1u << 20) /* longer lines are broken ones */

/* A verifier's state, fed one line at a time. */
struct jchain {
	uint64_t lines;        /* lines fed so far */
	uint64_t seq;          /* the last line's seq */
	char hash[SHA256_HEX]; /* the last line's hash (64 zeros before any) */
	uint64_t bad;          /* the first broken line (1-based); 0: whole so far */
	char why[200];         /* why it is broken */
	/* Optional anchor: the seq and hash of a line coved knows it wrote
	 * (its in-memory tail); that line must hash to it and be there. */
	uint64_t anchor_seq; /* 0: none */
	char anchor_hash[SHA256_HEX];
};

/* jchain_hash() - the hex SHA-256 of @len bytes of @line into @out. */
void jchain_hash(const char *line, size_t len, char out[SHA256_HEX]);

/* jchain_start() - a verifier before the first line, without an anchor. */
void jchain_start(struct jchain *c);

/* jchain_line() - feeds the next line (@len bytes, no newline).  A line
 * is broken when it is no JSON object, its seq is not the next one, or
 * the previous line does not hash to its prev (then the previous line is
 * the one named: it changed, or this prev did).
 * Return: 0 while whole, -1 once broken (c->bad and c->why say where). */
int jchain_line(struct jchain *c, const char *line, size_t len);

/* jchain_verify() - feeds @len bytes of a whole journal through @c (which
 * jchain_start set up, an anchor optional); a last line without its
 * newline is a torn write and broken.
 * Return: 0 whole, -1 broken. */
int jchain_verify(struct jchain *c, const char *buf, size_t len);

/* jchain_verify_fd() - jchain_verify() over a file read from @fd to its
 * end, one line in memory at a time.  Return: 0 whole, -1 broken, or
 * -errno when the file cannot be read. */
int jchain_verify_fd(struct jchain *c, int fd);

/* jchain_finish() - after the last line: an anchor past the end means the
 * journal was cut short.  Return: 0 whole, -1 broken. */
int jchain_finish(struct jchain *c);

/* jchain_tail_seq() - the "seq" of one line, 0 when it has none. */
uint64_t jchain_tail_seq(const char *line, size_t len);

#endif
