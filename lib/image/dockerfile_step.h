/* Dockerfile steps (dockerfile_step.c): what dockerfile_parse() gives a
 * builder (dockerfile.h), and how it is freed. */
#ifndef COVE_IMAGE_DOCKERFILE_STEP_H
#define COVE_IMAGE_DOCKERFILE_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/sha256.h"
#include "lib/image/context.h"
#include "lib/image/dockerfile_word.h"

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
	struct ctx_files files; /* what the sources matched: set by dockerfile_resolve().
	                           A matched folder's contents go under dest; a matched
	                           file goes to dest + its rel name when dest ends with
	                           '/', else (one match only) to dest itself, or under it
	                           when dest is a folder in the image, as Docker does */
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

/* dockerfile_step_free() - frees what a step holds (not the step). */
void dockerfile_step_free(struct df_step *s);

/* dockerfile_free() - frees every step and the config; df is zeroed. */
void dockerfile_free(struct dockerfile *df);

#endif
