/* A build context (context.c): the folder a Dockerfile's COPY and ADD
 * read from.  Sources are resolved inside it with globs, .dockerignore is
 * honoured, links are never followed (a symlink is copied as a symlink, and
 * one that points out of the context is refused by name), and what a step
 * reads is hashed into its cache key. */
#ifndef COVE_IMAGE_CONTEXT_H
#define COVE_IMAGE_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/sha256.h"

#define CTX_ENTRIES_MAX  262144    /* entries one COPY may read */
#define CTX_DEPTH_MAX    128       /* folder depth below the context */
#define CTX_IGNORE_MAX   4096      /* .dockerignore patterns */
#define CTX_IGNORE_BYTES (1 << 20) /* .dockerignore's size */

/* One .dockerignore pattern, cut at '/'. */
struct ctx_pattern {
	char **comps;
	size_t n;
	bool except; /* a "!" line: re-includes what it matches */
};

/* An open context.  rootfd is the folder; every read goes through it with
 * O_NOFOLLOW, one component at a time. */
struct ctx {
	int rootfd;
	struct ctx_pattern *ignore;
	size_t nignore;
	bool has_except;
};

/* One thing a COPY reads. */
struct ctx_entry {
	char *src;               /* its path in the context ("app/main.py") */
	char *rel;               /* where it lands under the destination: a matched file's
	               base name, or the path below a matched folder */
	uint32_t mode;           /* st_mode: type and permission bits */
	uint64_t size;           /* a regular file's size */
	char *link;              /* a symlink's target, as it is */
	uint8_t sha[SHA256_LEN]; /* a regular file's content */
	bool archive;            /* a matched regular file libarchive reads as a tar
	                             (plain, gzip, bzip2, xz or zstd); set only when asked */
};

/* What one COPY or ADD reads, sorted by name within each folder. */
struct ctx_files {
	struct ctx_entry *v;
	size_t n, cap;
	size_t matches;           /* files and folders the patterns matched */
	uint8_t hash[SHA256_LEN]; /* names, modes, contents and link targets */
};

/* ctx_open() - opens the folder dir as a context and reads its
 * .dockerignore (a symlink there is refused).  Call ctx_close() after.
 * Return: 0; -errno with a one-line message. */
int ctx_open(struct ctx *c, const char *dir, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void ctx_close(struct ctx *c);

/* ctx_ignore_parse() - the patterns of a .dockerignore text (lines; '#'
 * comments; "!" exceptions; a leading '/' dropped; "**" any number of
 * folders), added to c's.  ctx_open() calls it; tests may too.
 * Return: 0; -EINVAL (message) over CTX_IGNORE_MAX; -ENOMEM. */
int ctx_ignore_parse(struct ctx *c, const char *text, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* ctx_ignored() - whether .dockerignore leaves out path (relative to the
 * context, cleaned): the last pattern that matches it or a folder above it
 * decides, as Docker's does. */
bool ctx_ignored(const struct ctx *c, const char *path);

/* ctx_resolve() - reads the sources of one COPY or ADD.
 * @pats: source paths relative to the context, without "..", globs
 *        ('*', '?', '[...]') allowed in any component; "" or "." is the
 *        whole context
 * @archives: note which matched regular files are tar archives (ADD)
 * @out: zeroed by the caller; free with ctx_files_free() (also on error)
 *
 * A matched folder contributes everything below it (not itself); an
 * ignored file is as if absent.  A pattern that matches nothing, a symlink
 * whose target is absolute or climbs out of the context, a symlink inside
 * a source path, a device, fifo or socket, over CTX_ENTRIES_MAX entries or
 * CTX_DEPTH_MAX folders: -EINVAL (or -errno) with a line naming it.
 * Return: 0 with out->hash set. */
int ctx_resolve(const struct ctx *c, const char *const *pats, size_t npats, bool archives,
                struct ctx_files *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void ctx_files_free(struct ctx_files *f);

/* ctx_step_key() - a build step's cache key: SHA-256 of the parent's key,
 * the instruction's text (after substitution) and the hash of what it
 * reads (zeros when nothing). */
void ctx_step_key(const uint8_t parent[SHA256_LEN], const char *text,
                  const uint8_t inputs[SHA256_LEN], uint8_t out[SHA256_LEN]);

#endif
