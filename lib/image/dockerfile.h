/* Dockerfiles (dockerfile.c): one stage parsed into the steps a builder
 * runs in order, the image config they leave, and each step's cache key.
 *
 * Call order: dockerfile_parse() (pure: text in, steps out), then
 * dockerfile_resolve() (reads the build context for COPY and ADD and sets
 * every key), then dockerfile_free().  Every message is one line,
 * "Dockerfile:LINE: ...".  The steps, the config and dockerfile_free()
 * are in dockerfile_step.h. */
#ifndef COVE_IMAGE_DOCKERFILE_H
#define COVE_IMAGE_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/image/dockerfile_step.h"

#define DF_BYTES_MAX  (1 << 20) /* a Dockerfile's size */
#define DF_INSTRS_MAX 1024      /* instructions in one */

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

#endif
