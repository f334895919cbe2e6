/* Dockerfiles (dockerfile.c): one stage parsed into the steps a builder
 * runs in order, the image config they leave, and each step's cache key.
 *
 * Call order: dockerfile_parse() (pure: text in, steps out), then
 * dockerfile_resolve() (reads the build context for COPY and ADD and sets
 * every key), then dockerfile_free().  Every message is one line,
 * "Dockerfile:LINE: ...". */
#ifndef COVE_IMAGE_DOCKERFILE_H
#define COVE_IMAGE_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/sha256.h"
#include "lib/image/context.h"
#include "lib/image/dockerfile_word.h"

#define DF_BYTES_MAX  (1 << 20) /* a Dockerfile's size */
#define DF_INSTRS_MAX 1024      /* instructions in one */

enum df_kind {
	DF_FROM,
	DF_ARG,
	DF_RUN,
	DF_COPY, /* COPY and ADD */
	DF_ENV,
	DF_WORKDIR,
	DF_USER,
	DF_CMD,
	DF_ENTRYPOINT,
	DF_EXPOSE,
	DF_LABEL,
};

/* COPY or ADD. */
struct df_copy {
	bool add;            /* ADD: a matched local tar archive is unpacked (ctx_entry.archive) */
	struct df_list srcs; /* source patterns after substitution, cleaned, relative to the
	                        context ("" is the whole context) */
	char *dest;          /* absolute (a relative one is joined to the WORKDIR), cleaned;
	                        ends with '/' when written as a folder ("dir/", ".") */
	char *chown_user;    /* --chown's user and group as given, after substitution; */
	char *chown_group;   /*   NULL when absent */
	long uid, gid;       /* the same when numeric, else -1 */
	struct ctx_files files; /* what the sources matched: set by dockerfile_resolve() */
};

/* One step.  args by kind:
 *   FROM: { image reference }
 *   ARG: { "NAME=value" or "NAME" (declared, unset) ... }
 *   RUN, CMD, ENTRYPOINT: the JSON form's argv, or { command } when shell
 *        is set (a builder runs it with /bin/sh -c); never substituted
 *   ENV, LABEL: { "KEY=value" ... }
 *   WORKDIR: { absolute path }   USER: { user[:group] }
 *   EXPOSE: { "port[/proto]" ... }
 * A RUN runs with the ENV so far and the ARGs declared so far (ENV wins),
 * in the WORKDIR and as the USER so far. */
struct df_step {
	enum df_kind kind;
	unsigned line; /* the instruction's first line */
	char *text;    /* the instruction after substitution, as keyed and logged */
	struct df_list args;
	bool shell;
	struct df_copy copy;     /* DF_COPY */
	uint8_t key[SHA256_LEN]; /* set by dockerfile_resolve() */
};

/* What the steps leave in the image's config, over the base image's.  A
 * field is NULL (a list empty) when the Dockerfile does not set it. */
struct df_config {
	struct df_list env; /* "KEY=value", the Dockerfile's ENVs, a later one replacing */
	char *workdir;
	char *user;
	bool has_cmd, has_entrypoint; /* set: replaces the base's (an ENTRYPOINT with no CMD
	                                 before it clears CMD, as Docker does) */
	struct df_list cmd;           /* a shell form is { "/bin/sh", "-c", command } */
	struct df_list entrypoint;
	struct df_list expose; /* "port[/proto]" */
	struct df_list labels; /* "KEY=value" */
};

struct dockerfile {
	struct df_step *steps; /* steps[0] is the FROM */
	size_t nsteps;
	struct df_config config;
};

/* dockerfile_name() - the instruction word of a kind ("COPY" for both COPY and ADD). */
const char *dockerfile_name(enum df_kind kind);

/* dockerfile_parse() - parses one Dockerfile.
 * @text, @len: its bytes (at most DF_BYTES_MAX, no NUL)
 * @build_args: "NAME=value" strings that override ARG defaults (NULL when none); a name
 *              the Dockerfile does not declare is ignored
 * @df: the result, zeroed here; free with dockerfile_free() (also on error)
 *
 * Supported: the escape directive; comments; line continuations; FROM (one,
 * without AS or --platform); ARG; RUN, CMD, ENTRYPOINT (JSON and shell
 * forms); COPY and ADD (--chown, several sources, globs); ENV and LABEL
 * (KEY=value and legacy KEY value); WORKDIR; USER; EXPOSE.  Substitution
 * (dockerfile_word.h) in FROM from the ARGs before it, elsewhere from ARG
 * and ENV.  Refused with their line: HEALTHCHECK, ONBUILD, VOLUME, SHELL,
 * STOPSIGNAL and MAINTAINER ("INSTR is not supported"), unknown words, a
 * second FROM, COPY --from and other flags, ADD of a URL, heredocs.
 * Return: 0; -EINVAL with "Dockerfile:LINE: ..." in err; -ENOMEM. */
int dockerfile_parse(const char *text, size_t len, const char *const *build_args, size_t nargs,
                     struct dockerfile *df, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* dockerfile_resolve() - resolves every COPY's sources in the build
 * context (context.h) and sets every step's key:
 * key = SHA-256(parent key (zeros for FROM), text, inputs), where the
 * inputs of FROM are the hash of base_id (the base image's digest; NULL
 * is ""), of COPY the hash of what it reads and its owner, of the rest
 * zeros.  So a change to a step, or to what it reads, changes its key and
 * every key after it, and none before.
 * @context: the context folder; may be NULL when there is no COPY
 * Return: 0; -errno with "Dockerfile:LINE: ..." naming the source. */
int dockerfile_resolve(struct dockerfile *df, const char *context, const char *base_id, char *err,
                       size_t errlen) __attribute__((warn_unused_result));

void dockerfile_free(struct dockerfile *df);

#endif
