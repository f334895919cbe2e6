/* Dockerfile instructions (dockerfile_instr.c): the parser's state and one
 * function per instruction, for dockerfile.c's table.  Private to
 * lib/image's Dockerfile parser. */
#ifndef COVE_IMAGE_DOCKERFILE_INSTR_H
#define COVE_IMAGE_DOCKERFILE_INSTR_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/image/dockerfile_step.h"
#include "lib/image/dockerfile_word.h"

/* One Dockerfile being parsed. */
struct parser {
	struct dockerfile *df;
	struct df_lexer lx;
	struct df_vars meta, args, env; /* ARGs before FROM, ARGs after, ENVs */
	const char *const *build_args;
	size_t nargs;
	bool from_seen, cmd_set;
	char *workdir; /* NULL: "/" */
	unsigned line;
	char *err;
	size_t errlen;
};

/* df_perr() - "Dockerfile:LINE: message" into p's err.  Return: -EINVAL. */
int df_perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* df_words_at() - df_words() with p's lexer; a message gets the line. */
int df_words_at(struct parser *p, const char *s, bool split, struct df_list *out)
    __attribute__((warn_unused_result));

/* One instruction each.
 * @kw: the instruction's name in capitals
 * @rest: what follows it, continuations joined, blanks trimmed
 * Return: 0 with a step appended to p->df (ARG before FROM appends none);
 * -EINVAL (message) or -ENOMEM. */
int df_do_from(struct parser *p, const char *kw, const char *rest);
int df_do_arg(struct parser *p, const char *kw, const char *rest);
int df_do_env(struct parser *p, const char *kw, const char *rest); /* ENV and LABEL */
int df_do_one(struct parser *p, const char *kw, const char *rest); /* WORKDIR and USER */
int df_do_expose(struct parser *p, const char *kw, const char *rest);
int df_do_command(struct parser *p, const char *kw, const char *rest); /* RUN, CMD, ENTRYPOINT */
int df_do_copy(struct parser *p, const char *kw, const char *rest);    /* COPY and ADD */

#endif
