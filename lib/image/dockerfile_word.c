/* Dockerfile words: quotes, escapes and $ substitution (dockerfile_word.h). */
#include "lib/image/dockerfile_word.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"

int df_list_push(struct df_list *l, const char *s, size_t len)
{
	if (l->n + 2 > l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		char **v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	char *c = strndup(s, len);
	if (!c)
		return -ENOMEM;
	l->v[l->n++] = c;
	l->v[l->n] = NULL;
	return 0;
}

void df_list_free(struct df_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	*l = (struct df_list){ 0 };
}

const struct df_var *df_vars_find(const struct df_vars *vs, const char *name)
{
	for (size_t i = 0; vs && i < vs->n; i++)
		if (!strcmp(vs->v[i].name, name))
			return &vs->v[i];
	return NULL;
}

int df_vars_set(struct df_vars *vs, const char *name, const char *value)
{
	char *val = NULL;
	if (value && !(val = strdup(value)))
		return -ENOMEM;
	struct df_var *v = (struct df_var *)df_vars_find(vs, name);
	if (v) {
		free(v->value);
		v->value = val;
		return 0;
	}
	if (vs->n == DF_NAMES_MAX) {
		free(val);
		return -E2BIG;
	}
	if (vs->n == vs->cap) {
		size_t cap = vs->cap ? 2 * vs->cap : 8;
		struct df_var *nv = realloc(vs->v, cap * sizeof(*nv));
		if (!nv) {
			free(val);
			return -ENOMEM;
		}
		vs->v = nv;
		vs->cap = cap;
	}
	char *n = strdup(name);
	if (!n) {
		free(val);
		return -ENOMEM;
	}
	vs->v[vs->n++] = (struct df_var){ .name = n, .value = val };
	return 0;
}

void df_vars_free(struct df_vars *vs)
{
	for (size_t i = 0; i < vs->n; i++) {
		free(vs->v[i].name);
		free(vs->v[i].value);
	}
	free(vs->v);
	*vs = (struct df_vars){ 0 };
}

/* One word being built, bounded by DF_WORD_MAX. */
struct buf {
	char *p;
	size_t n, cap;
};

/* The text being scanned. */
struct scan {
	struct df_lexer *lx;
	const char *s;
	size_t i, n;
	int depth;
	char *err;
	size_t errlen;
};

static int put(struct scan *sc, struct buf *b, const char *s, size_t len)
{
	if (b->n + len > DF_WORD_MAX)
		return errf(sc->err, sc->errlen, -EINVAL, "a word is over %d KiB",
		            DF_WORD_MAX / 1024);
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = 0;
	return 0;
}

/* A variable's value put into b, charged to the file's budget. */
static int put_value(struct scan *sc, struct buf *b, const char *v)
{
	size_t len = v ? strlen(v) : 0;
	if (len > sc->lx->budget)
		return errf(sc->err, sc->errlen, -EINVAL, "substitutions produce over %u MiB",
		            DF_EXPAND_BUDGET >> 20);
	sc->lx->budget -= len;
	return put(sc, b, v ? v : "", len);
}

static const char *lookup(const struct df_lexer *lx, const char *name)
{
	const struct df_var *v = df_vars_find(lx->env, name);
	if (!v)
		v = df_vars_find(lx->args, name);
	return v ? v->value : NULL;
}

static bool name_start(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static int lex_word(struct scan *sc, struct buf *b, bool split, char stop, bool *started);

/* ${NAME...}: sc->i is just after the '{'. */
static int lex_brace(struct scan *sc, struct buf *b)
{
	size_t start = sc->i;
	char name[256];
	while (sc->i < sc->n && name_char(sc->s[sc->i]) && sc->i - start < sizeof(name) - 1)
		sc->i++;
	size_t len = sc->i - start;
	if (!len || !name_start(sc->s[start]))
		return errf(sc->err, sc->errlen, -EINVAL, "bad substitution: '${' needs a name");
	memcpy(name, sc->s + start, len);
	name[len] = 0;
	const char *val = lookup(sc->lx, name);
	if (sc->i < sc->n && sc->s[sc->i] == '}') {
		sc->i++;
		return put_value(sc, b, val);
	}
	bool colon = sc->i < sc->n && sc->s[sc->i] == ':';
	if (colon)
		sc->i++;
	char op = sc->i < sc->n ? sc->s[sc->i] : 0;
	if (op != '-' && op != '+' && op != '?')
		return errf(sc->err, sc->errlen, -EINVAL,
		            "bad substitution in '${%s': only :- :+ :? - + ?", name);
	sc->i++;
	if (++sc->depth > DF_NEST_MAX)
		return errf(sc->err, sc->errlen, -EINVAL, "substitutions nested over %d deep",
		            DF_NEST_MAX);
	struct buf w = { 0 };
	bool started = false;
	int r = lex_word(sc, &w, false, '}', &started);
	sc->depth--;
	if (!r && (sc->i >= sc->n || sc->s[sc->i] != '}'))
		r = errf(sc->err, sc->errlen, -EINVAL, "unterminated '${%s'", name);
	if (r) {
		free(w.p);
		return r;
	}
	sc->i++;
	bool cond = colon ? val && *val : val != NULL;
	const char *word = w.p ? w.p : "";
	if (op == '-')
		r = put_value(sc, b, cond ? val : word);
	else if (op == '+')
		r = put_value(sc, b, cond ? word : "");
	else if (!cond)
		r = errf(sc->err, sc->errlen, -EINVAL, "%s: %s", name, *word ? word : "not set");
	else
		r = put_value(sc, b, val);
	free(w.p);
	return r;
}

/* A '$': sc->i is just after it. */
static int lex_dollar(struct scan *sc, struct buf *b)
{
	char c = sc->i < sc->n ? sc->s[sc->i] : 0;
	if (c == '$') {
		sc->i++;
		return put(sc, b, "$", 1);
	}
	if (c == '{') {
		sc->i++;
		return lex_brace(sc, b);
	}
	if (!name_start(c))
		return put(sc, b, "$", 1);
	char name[256];
	size_t len = 0;
	while (sc->i < sc->n && name_char(sc->s[sc->i])) {
		if (len == sizeof(name) - 1)
			return errf(sc->err, sc->errlen, -EINVAL,
			            "a variable name is over %zu bytes", sizeof(name) - 1);
		name[len++] = sc->s[sc->i++];
	}
	name[len] = 0;
	return put_value(sc, b, lookup(sc->lx, name));
}

/* "...": sc->i is just after the opening quote. */
static int lex_double(struct scan *sc, struct buf *b)
{
	int r = 0;
	while (!r && sc->i < sc->n) {
		char c = sc->s[sc->i++];
		if (c == '"')
			return 0;
		if (c == '$') {
			r = lex_dollar(sc, b);
		} else if (c == sc->lx->esc && sc->i < sc->n &&
		           (sc->s[sc->i] == '"' || sc->s[sc->i] == '$' ||
		            sc->s[sc->i] == sc->lx->esc)) {
			r = put(sc, b, &sc->s[sc->i++], 1);
		} else {
			r = put(sc, b, &c, 1);
		}
	}
	return r ? r : errf(sc->err, sc->errlen, -EINVAL, "unterminated double quote");
}

/* One word into b, up to an unquoted blank (when split) or stop. */
static int lex_word(struct scan *sc, struct buf *b, bool split, char stop, bool *started)
{
	int r = 0;
	while (!r && sc->i < sc->n) {
		char c = sc->s[sc->i];
		if ((stop && c == stop) || (split && blank(c)))
			break;
		*started = true;
		sc->i++;
		if (c == '\'') {
			const char *q = memchr(sc->s + sc->i, '\'', sc->n - sc->i);
			if (!q)
				return errf(sc->err, sc->errlen, -EINVAL,
				            "unterminated single quote");
			r = put(sc, b, sc->s + sc->i, (size_t)(q - (sc->s + sc->i)));
			sc->i = (size_t)(q - sc->s) + 1;
		} else if (c == '"') {
			r = lex_double(sc, b);
		} else if (c == '$') {
			r = lex_dollar(sc, b);
		} else if (c == sc->lx->esc && sc->i < sc->n) {
			r = put(sc, b, &sc->s[sc->i++], 1);
		} else {
			r = put(sc, b, &c, 1);
		}
	}
	return r;
}

int df_words(struct df_lexer *lx, const char *s, bool split, struct df_list *out, char *err,
             size_t errlen)
{
	struct scan sc = { .lx = lx, .s = s, .n = strlen(s), .err = err, .errlen = errlen };
	struct buf b = { 0 };
	int r = 0;
	for (;;) {
		while (split && sc.i < sc.n && blank(s[sc.i]))
			sc.i++;
		if (split && sc.i >= sc.n)
			break;
		bool started = false;
		b.n = 0;
		r = lex_word(&sc, &b, split, 0, &started);
		if (r)
			break;
		if ((started || !split) && (r = df_list_push(out, b.p ? b.p : "", b.n)))
			break;
		if (!split)
			break;
	}
	free(b.p);
	return r;
}
