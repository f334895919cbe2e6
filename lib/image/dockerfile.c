/* Dockerfiles: lines, instructions, steps and keys (dockerfile.h). */
#include "lib/image/dockerfile.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errf.h"
#include "lib/image/dockerfile_instr.h"

/* ---- lines ----------------------------------------------------------------- */

static const struct {
	const char *name;
	int (*fn)(struct parser *p, const char *kw, const char *rest);
} instrs[] = {
	{ "FROM", df_do_from },          { "ARG", df_do_arg },
	{ "RUN", df_do_command },        { "CMD", df_do_command },
	{ "ENTRYPOINT", df_do_command }, { "COPY", df_do_copy },
	{ "ADD", df_do_copy },           { "ENV", df_do_env },
	{ "LABEL", df_do_env },          { "WORKDIR", df_do_one },
	{ "USER", df_do_one },           { "EXPOSE", df_do_expose },
};

static const char *const refused[] = { "HEALTHCHECK", "ONBUILD",    "VOLUME",
	                               "SHELL",       "STOPSIGNAL", "MAINTAINER" };

/* One instruction, its continuation lines joined. */
static int dispatch(struct parser *p, char *ins)
{
	while (*ins == ' ' || *ins == '\t')
		ins++;
	size_t klen = strcspn(ins, " \t");
	char kw[16];
	snprintf(kw, sizeof(kw), "%.*s", (int)(klen < sizeof(kw) ? klen : sizeof(kw) - 1), ins);
	char *rest = ins + klen + strspn(ins + klen, " \t");
	size_t rl = strlen(rest);
	while (rl && (rest[rl - 1] == ' ' || rest[rl - 1] == '\t'))
		rest[--rl] = 0;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (!strcasecmp(kw, refused[i]) && klen == strlen(refused[i]))
			return df_perr(p, "%s is not supported", refused[i]);
	for (size_t i = 0; i < sizeof(instrs) / sizeof(instrs[0]); i++) {
		if (strcasecmp(kw, instrs[i].name) || klen != strlen(instrs[i].name))
			continue;
		if (!p->from_seen && instrs[i].fn != df_do_from && instrs[i].fn != df_do_arg)
			return df_perr(p, "%s before FROM", instrs[i].name);
		return instrs[i].fn(p, instrs[i].name, rest);
	}
	return df_perr(p, "unknown instruction '%.*s'", (int)(klen > 40 ? 40 : klen), ins);
}

/* A "# name=value" line before anything else.  Return: 1 when it was one,
 * 0 when directives are over, or an error. */
static int directive(struct parser *p, const char *l, size_t len, bool *esc_seen)
{
	char line[256], name[32], value[200];
	if (len >= sizeof(line) || !len || l[0] != '#')
		return 0;
	snprintf(line, sizeof(line), "%.*s", (int)len, l);
	int n = 0;
	if (sscanf(line, "# %31[a-zA-Z0-9] = %199s %n", name, value, &n) != 2 || line[n] ||
	    !isalpha((unsigned char)name[0]))
		return 0;
	if (!strcasecmp(name, "escape")) {
		if (*esc_seen)
			return df_perr(p, "only one escape directive may be given");
		if (strcmp(value, "\\") && strcmp(value, "`"))
			return df_perr(p, "escape directive: '%s' is neither '\\' nor '`'", value);
		*esc_seen = true;
		p->lx.esc = value[0];
		return 1;
	}
	return !strcasecmp(name, "syntax") || !strcasecmp(name, "check");
}

/* Leading blanks of a line of len bytes (not NUL-terminated). */
static size_t lead(const char *l, size_t len)
{
	size_t k = 0;
	while (k < len && (l[k] == ' ' || l[k] == '\t'))
		k++;
	return k;
}

/* Whether the line ends with the escape character (trailing blanks allowed);
 * if so, *len is cut before it. */
static bool continues(const struct parser *p, const char *l, size_t *len)
{
	size_t n = *len;
	while (n && (l[n - 1] == ' ' || l[n - 1] == '\t'))
		n--;
	if (!n || l[n - 1] != p->lx.esc)
		return false;
	*len = n - 1;
	return true;
}

/* Lines into instructions: comments and blank lines dropped (inside a
 * continued instruction too, as Docker does), continuations joined. */
static int parse_lines(struct parser *p, const char *text, size_t len)
{
	bool directives = true, esc_seen = false, open = false;
	unsigned lineno = 0, count = 0, start = 0;
	char *ins = malloc(len + 1);
	size_t n = 0;
	int r = ins ? 0 : -ENOMEM;
	for (size_t i = 0; !r && i < len;) {
		const char *l = text + i;
		const char *nl = memchr(l, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - l) : len - i;
		i += ll + 1;
		p->line = ++lineno;
		if (ll && l[ll - 1] == '\r')
			ll--;
		if (directives && (r = directive(p, l, ll, &esc_seen)) != 0) {
			r = r > 0 ? 0 : r;
			continue;
		}
		directives = false;
		size_t k = lead(l, ll);
		if (k == ll || l[k] == '#')
			continue;
		if (!open) {
			open = true;
			n = 0;
			start = lineno;
			if (++count > DF_INSTRS_MAX)
				r = df_perr(p, "over %d instructions", DF_INSTRS_MAX);
		}
		bool more = continues(p, l, &ll);
		memcpy(ins + n, l, ll);
		n += ll;
		ins[n] = 0;
		p->line = start;
		if (!r && !more) {
			open = false;
			r = dispatch(p, ins);
		}
	}
	p->line = start;
	if (!r && open)
		r = dispatch(p, ins);
	free(ins);
	return r;
}

int dockerfile_parse(const char *text, size_t len, const char *const *build_args, size_t nargs,
                     struct dockerfile *df, char *err, size_t errlen)
{
	*df = (struct dockerfile){ 0 };
	if (len > DF_BYTES_MAX)
		return errf(err, errlen, -EINVAL, "Dockerfile: over %d bytes", DF_BYTES_MAX);
	if (memchr(text, 0, len))
		return errf(err, errlen, -EINVAL, "Dockerfile: a NUL byte");
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
		text += 3; /* a UTF-8 byte order mark, as Docker skips it */
		len -= 3;
	}
	struct parser p = {
		.df = df,
		.lx = { .esc = '\\', .budget = DF_EXPAND_BUDGET },
		.build_args = build_args,
		.nargs = build_args ? nargs : 0,
		.line = 1,
		.err = err,
		.errlen = errlen,
	};
	p.lx.args = &p.meta;
	int r = parse_lines(&p, text, len);
	if (!r && !p.from_seen) {
		p.line = 1;
		r = df_perr(&p, "no FROM instruction");
	}
	if (r == -ENOMEM)
		errf(err, errlen, r, "Dockerfile: out of memory");
	df_vars_free(&p.meta);
	df_vars_free(&p.args);
	df_vars_free(&p.env);
	free(p.workdir);
	return r;
}

/* ---- keys ------------------------------------------------------------------ */

static int resolve_copy(struct df_step *st, const struct ctx *c, uint8_t in[SHA256_LEN], char *err,
                        size_t errlen)
{
	struct df_copy *cp = &st->copy;
	char msg[600];
	ctx_files_free(&cp->files);
	int r = ctx_resolve(c, (const char *const *)cp->srcs.v, cp->srcs.n, cp->add, &cp->files,
	                    msg, sizeof(msg));
	if (r)
		return errf(err, errlen, r, "Dockerfile:%u: %s", st->line, msg);
	size_t dl = strlen(cp->dest);
	if (cp->files.matches > 1 && cp->dest[dl - 1] != '/')
		return errf(
		    err, errlen, -EINVAL,
		    "Dockerfile:%u: %s with several sources needs a destination ending in '/'",
		    st->line, cp->add ? "ADD" : "COPY");
	struct sha256 h;
	sha256_init(&h);
	sha256_update(&h, cp->files.hash, SHA256_LEN);
	const char *u = cp->chown_user ? cp->chown_user : "",
	           *g = cp->chown_group ? cp->chown_group : "";
	sha256_update(&h, u, strlen(u) + 1);
	sha256_update(&h, g, strlen(g) + 1);
	sha256_final(&h, in);
	return 0;
}

int dockerfile_resolve(struct dockerfile *df, const char *context, const char *base_id, char *err,
                       size_t errlen)
{
	struct ctx c = { .rootfd = -1 };
	uint8_t parent[SHA256_LEN] = { 0 };
	int r = 0;
	for (size_t i = 0; !r && i < df->nsteps; i++) {
		struct df_step *st = &df->steps[i];
		uint8_t in[SHA256_LEN] = { 0 };
		if (st->kind == DF_FROM) {
			struct sha256 h;
			sha256_init(&h);
			sha256_update(&h, base_id ? base_id : "", base_id ? strlen(base_id) : 0);
			sha256_final(&h, in);
		} else if (st->kind == DF_COPY) {
			if (c.rootfd < 0 && !context)
				r = errf(err, errlen, -EINVAL,
				         "Dockerfile:%u: COPY needs a build context", st->line);
			char msg[600];
			if (!r && c.rootfd < 0 && (r = ctx_open(&c, context, msg, sizeof(msg))))
				r = errf(err, errlen, r, "Dockerfile: %s", msg);
			if (!r)
				r = resolve_copy(st, &c, in, err, errlen);
		}
		if (!r) {
			ctx_step_key(parent, st->text, in, st->key);
			memcpy(parent, st->key, SHA256_LEN);
		}
	}
	if (c.rootfd >= 0)
		ctx_close(&c);
	return r;
}
