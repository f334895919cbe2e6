/* Dockerfile words (dockerfile_word.c): the quotes, escapes and variable
 * substitution Docker applies to the arguments of FROM, ARG, ENV, LABEL,
 * WORKDIR, USER, EXPOSE, COPY and ADD, and the small lists and variable
 * tables the parser keeps.  Pure: no files. */
#ifndef COVE_IMAGE_DOCKERFILE_WORD_H
#define COVE_IMAGE_DOCKERFILE_WORD_H

#include <stdbool.h>
#include <stddef.h>

#define DF_WORD_MAX      (64 * 1024) /* bytes of one word after substitution */
#define DF_EXPAND_BUDGET (16u << 20) /* bytes all substitutions of one file may produce */
#define DF_NEST_MAX      16          /* ${A:-${B:-...}} depth */
#define DF_NAMES_MAX     512         /* names in one table (ENV, ARG, LABEL, EXPOSE) */

/* A growable list of malloc'ed strings; v[n] is NULL once n > 0. */
struct df_list {
	char **v;
	size_t n, cap;
};

/* df_list_push() - appends a copy of s[0..len).  Return: 0 or -ENOMEM. */
int df_list_push(struct df_list *l, const char *s, size_t len) __attribute__((warn_unused_result));
void df_list_free(struct df_list *l);

/* Variables by name; a NULL value is declared but unset (an ARG with no
 * default and no build arg). */
struct df_var {
	char *name;
	char *value;
};
struct df_vars {
	struct df_var *v;
	size_t n, cap;
};

/* df_vars_find() - the variable called name, or NULL. */
const struct df_var *df_vars_find(const struct df_vars *vs, const char *name);
/* df_vars_set() - sets (or adds) name to a copy of value (NULL: unset).
 * Return: 0; -E2BIG when a new name would pass DF_NAMES_MAX; -ENOMEM. */
int df_vars_set(struct df_vars *vs, const char *name, const char *value)
    __attribute__((warn_unused_result));
void df_vars_free(struct df_vars *vs);

/* The state of substitution while one file is parsed. */
struct df_lexer {
	char esc;                         /* the escape character: '\\' or '`' */
	const struct df_vars *env, *args; /* looked up in this order; either may be NULL */
	size_t budget;                    /* bytes substitutions may still produce */
};

/* df_words() - processes s as Docker processes an instruction's words.
 * @split: split at unquoted blanks into several words (else s is one word)
 * @out: the words are appended to it
 *
 * Outside quotes the escape character makes the next character literal;
 * '...' is literal; in "..." the escape character escapes only '"', '$' and
 * itself.  $NAME, ${NAME}, ${NAME:-word}, ${NAME-word}, ${NAME:+word},
 * ${NAME+word}, ${NAME:?word} and ${NAME?word} are substituted (an unset
 * name gives ""); "$$" is a literal '$' and a '$' before anything else
 * than a name or '{' stays as it is.
 * Return: 0; -EINVAL with a message (no "Dockerfile:" prefix) for an
 * unterminated quote or ${, a bad substitution, a word over DF_WORD_MAX,
 * the budget spent or nesting over DF_NEST_MAX; -ENOMEM. */
int df_words(struct df_lexer *lx, const char *s, bool split, struct df_list *out, char *err,
             size_t errlen) __attribute__((warn_unused_result));

#endif
