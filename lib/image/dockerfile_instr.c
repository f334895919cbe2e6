/* Dockerfile instructions: one function each, from the text after the
 * instruction word to a step (dockerfile_instr.h). */
#include "lib/image/dockerfile_instr.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errf.h"

int df_perr(struct parser *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return errf(p->err, p->errlen, -EINVAL, "Dockerfile:%u: %s", p->line, msg);
}

int df_words_at(struct parser *p, const char *s, bool split, struct df_list *out)
{
	char msg[300];
	int r = df_words(&p->lx, s, split, out, msg, sizeof(msg));
	if (r == -EINVAL)
		return df_perr(p, "%s", msg);
	return r;
}

/* ---- text of a step: KW then its words quoted as JSON strings (bytes over
 * 0x7f as they are), unambiguous in a key ---------------------------------- */

static char *render(const char *kw, const struct df_list *l)
{
	size_t cap = strlen(kw) + 4;
	for (size_t i = 0; i < l->n; i++)
		cap += 6 * strlen(l->v[i]) + 3;
	char *s = malloc(cap), *o = s;
	if (!s)
		return NULL;
	o += sprintf(o, "%s [", kw);
	for (size_t i = 0; i < l->n; i++) {
		*o++ = i ? ',' : '"';
		if (i)
			*o++ = '"';
		for (const unsigned char *c = (const unsigned char *)l->v[i]; *c; c++) {
			if (*c == '"' || *c == '\\')
				o += sprintf(o, "\\%c", *c);
			else if (*c < 0x20 || *c == 0x7f)
				o += sprintf(o, "\\u%04x", *c);
			else
				*o++ = (char)*c;
		}
		*o++ = '"';
	}
	strcpy(o, "]");
	return s;
}

/* ---- paths ----------------------------------------------------------------- */

/* in, cleaned: "." and empty components dropped, ".." climbing; absolute
 * (joined to base when relative) or, when base is NULL, relative.
 * Return: 0, 1 when a relative path climbs above its top, -1 over PATH_MAX. */
static int clean_path(const char *base, const char *in, char out[PATH_MAX])
{
	char buf[2 * PATH_MAX + 2];
	bool abs = base != NULL;
	if (strlen(in) >= PATH_MAX || (base && strlen(base) >= PATH_MAX))
		return -1;
	snprintf(buf, sizeof(buf), "%s/%s", in[0] == '/' || !base ? "" : base, in);
	size_t n = 0;
	char *save = NULL;
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			if (!n && !abs)
				return 1;
			while (n && out[n - 1] != '/')
				n--;
			n -= n > 0;
			continue;
		}
		size_t len = strlen(c);
		if (n + len + 2 > PATH_MAX)
			return -1;
		if (n || abs)
			out[n++] = '/';
		memcpy(out + n, c, len);
		n += len;
	}
	if (!n && abs)
		out[n++] = '/';
	out[n] = 0;
	return 0;
}

/* ---- steps ----------------------------------------------------------------- */

/* Appends st (taken over, freed on failure) with its text. */
static int push_step(struct parser *p, struct df_step *st, const char *kw)
{
	struct dockerfile *df = p->df;
	st->line = p->line;
	if (!st->text && !(st->text = render(kw, &st->args))) {
		dockerfile_step_free(st);
		return -ENOMEM;
	}
	struct df_step *v = realloc(df->steps, (df->nsteps + 1) * sizeof(*v));
	if (!v) {
		dockerfile_step_free(st);
		return -ENOMEM;
	}
	df->steps = v;
	v[df->nsteps++] = *st;
	return 0;
}

/* Sets "KEY=value" in a config list, replacing the same key. */
static int kv_set(struct df_list *l, const char *kv)
{
	size_t klen = strcspn(kv, "=") + 1;
	for (size_t i = 0; i < l->n; i++)
		if (!strncmp(l->v[i], kv, klen)) {
			char *c = strdup(kv);
			if (!c)
				return -ENOMEM;
			free(l->v[i]);
			l->v[i] = c;
			return 0;
		}
	return l->n < DF_NAMES_MAX ? df_list_push(l, kv, strlen(kv)) : -E2BIG;
}

/* -E2BIG from a table as a message. */
static int names(struct parser *p, int r)
{
	return r == -E2BIG ? df_perr(p, "over %d names in ENV, ARG, LABEL or EXPOSE", DF_NAMES_MAX)
	                   : r;
}

static const char *build_arg(const struct parser *p, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < p->nargs; i++)
		if (!strncmp(p->build_args[i], name, len) && p->build_args[i][len] == '=')
			return p->build_args[i] + len + 1;
	return NULL;
}

static bool valid_name(const char *s, size_t len)
{
	if (!len || isdigit((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return false;
	return true;
}

/* Whether a shell-form line holds a heredoc (a word "<<EOF", "<<-EOF", "2<<X"). */
static const char *heredoc(const char *s)
{
	for (const char *w = s; *w;) {
		w += strspn(w, " \t");
		const char *d = w + strspn(w, "0123456789");
		if (d[0] == '<' && d[1] == '<') {
			const char *t = d + 2 + (d[2] == '-');
			if (*t && *t != '<' && *t != ' ' && *t != '\t')
				return w;
		}
		w += strcspn(w, " \t");
	}
	return NULL;
}

/* A JSON array of strings into out; false when rest is not one. */
static bool json_form(const char *rest, struct df_list *out, int *r)
{
	*r = 0;
	if (rest[0] != '[')
		return false;
	json_t *a = json_loads(rest, 0, NULL);
	bool ok = json_is_array(a);
	for (size_t i = 0; ok && i < json_array_size(a); i++)
		ok = json_is_string(json_array_get(a, i));
	for (size_t i = 0; ok && !*r && i < json_array_size(a); i++) {
		json_t *s = json_array_get(a, i);
		*r = df_list_push(out, json_string_value(s), json_string_length(s));
	}
	json_decref(a);
	if (!ok)
		df_list_free(out);
	return ok;
}

/* ---- instructions ---------------------------------------------------------- */

int df_do_from(struct parser *p, const char *kw, const char *rest)
{
	(void)kw;
	if (p->from_seen)
		return df_perr(p, "a second FROM (multi-stage builds) is not supported");
	if (!strncmp(rest, "--", 2))
		return df_perr(p, "FROM %.*s is not supported", (int)strcspn(rest, "= \t"), rest);
	struct df_step st = { .kind = DF_FROM };
	p->lx.env = NULL;
	p->lx.args = &p->meta;
	int r = df_words_at(p, rest, true, &st.args);
	if (!r && st.args.n == 3 && !strcasecmp(st.args.v[1], "AS"))
		r = df_perr(p, "FROM ... AS %s: named stages are not supported", st.args.v[2]);
	else if (!r && st.args.n != 1)
		r = df_perr(p, "FROM takes one image");
	else if (!r && !st.args.v[0][0])
		r = df_perr(p, "FROM: the image is empty after substitution");
	if (!r && asprintf(&st.text, "FROM %s", st.args.v[0]) < 0)
		st.text = NULL, r = -ENOMEM;
	if (r) {
		dockerfile_step_free(&st);
		return r;
	}
	p->from_seen = true;
	p->lx.env = &p->env;
	p->lx.args = &p->args;
	return push_step(p, &st, "FROM");
}

int df_do_arg(struct parser *p, const char *kw, const char *rest)
{
	struct df_list w = { 0 };
	struct df_step st = { .kind = DF_ARG };
	int r = df_words_at(p, rest, true, &w);
	if (!r && !w.n)
		r = df_perr(p, "ARG needs a name");
	for (size_t i = 0; !r && i < w.n; i++) {
		char *eq = strchr(w.v[i], '=');
		size_t nlen = eq ? (size_t)(eq - w.v[i]) : strlen(w.v[i]);
		if (!valid_name(w.v[i], nlen)) {
			r = df_perr(p, "ARG '%s': a name is letters, digits and '_'", w.v[i]);
			break;
		}
		w.v[i][nlen] = 0;
		const char *val = build_arg(p, w.v[i]);
		const struct df_var *meta = df_vars_find(&p->meta, w.v[i]);
		if (!val && eq)
			val = eq + 1;
		if (!val && p->from_seen && meta)
			val = meta->value;
		r = names(p, df_vars_set(p->from_seen ? &p->args : &p->meta, w.v[i], val));
		char *kv = NULL;
		if (!r && asprintf(&kv, "%s%s%s", w.v[i], val ? "=" : "", val ? val : "") < 0)
			r = -ENOMEM;
		if (!r)
			r = df_list_push(&st.args, kv, strlen(kv));
		free(kv);
	}
	df_list_free(&w);
	if (r || !p->from_seen) {
		dockerfile_step_free(&st);
		return r;
	}
	return push_step(p, &st, kw);
}

/* ENV and LABEL: "K=v ..." or the legacy "K v", into st.args as "K=v". */
static int key_values(struct parser *p, const char *kw, const char *rest, struct df_list *out)
{
	size_t first = strcspn(rest, " \t");
	if (!memchr(rest, '=', first)) {
		const char *v = rest + first + strspn(rest + first, " \t");
		if (!first || !*v)
			return df_perr(p, "%s needs KEY=VALUE", kw);
		struct df_list w = { 0 };
		int r = df_words_at(p, v, false, &w);
		char *kv = NULL;
		if (!r && asprintf(&kv, "%.*s=%s", (int)first, rest, w.v[0]) < 0)
			r = -ENOMEM;
		if (!r)
			r = df_list_push(out, kv, strlen(kv));
		free(kv);
		df_list_free(&w);
		return r;
	}
	int r = df_words_at(p, rest, true, out);
	for (size_t i = 0; !r && i < out->n; i++) {
		char *eq = strchr(out->v[i], '=');
		if (!eq || eq == out->v[i])
			r = df_perr(p, "%s '%s' is not KEY=VALUE", kw, out->v[i]);
	}
	return r;
}

int df_do_env(struct parser *p, const char *kw, const char *rest)
{
	bool env = !strcasecmp(kw, "ENV");
	struct df_step st = { .kind = env ? DF_ENV : DF_LABEL };
	int r = key_values(p, env ? "ENV" : "LABEL", rest, &st.args);
	/* Every value was substituted before any is set, as Docker does. */
	for (size_t i = 0; !r && i < st.args.n; i++) {
		char *kv = st.args.v[i], *eq = strchr(kv, '=');
		*eq = 0;
		r = env ? names(p, df_vars_set(&p->env, kv, eq + 1)) : 0;
		*eq = '=';
		if (!r)
			r = names(p, kv_set(env ? &p->df->config.env : &p->df->config.labels, kv));
	}
	if (r) {
		dockerfile_step_free(&st);
		return r;
	}
	return push_step(p, &st, env ? "ENV" : "LABEL");
}

/* WORKDIR and USER: one word. */
int df_do_one(struct parser *p, const char *kw, const char *rest)
{
	bool wd = !strcasecmp(kw, "WORKDIR");
	struct df_step st = { .kind = wd ? DF_WORKDIR : DF_USER };
	int r = df_words_at(p, rest, false, &st.args);
	char path[PATH_MAX];
	if (!r && !st.args.v[0][0])
		r = df_perr(p, "%s needs a value", wd ? "WORKDIR" : "USER");
	if (!r && wd && clean_path(p->workdir ? p->workdir : "/", st.args.v[0], path))
		r = df_perr(p, "WORKDIR is over %d bytes", PATH_MAX);
	char *v = r ? NULL : strdup(wd ? path : st.args.v[0]), *v2 = v ? strdup(v) : NULL;
	if (!r && (!v || !v2))
		r = -ENOMEM;
	if (r) {
		free(v);
		free(v2);
		dockerfile_step_free(&st);
		return r;
	}
	char **slot = wd ? &p->df->config.workdir : &p->df->config.user;
	free(*slot);
	*slot = v;
	if (wd) {
		free(p->workdir);
		p->workdir = v2;
		free(st.args.v[0]);
		st.args.v[0] = strdup(path);
		if (!st.args.v[0]) {
			dockerfile_step_free(&st);
			return -ENOMEM;
		}
	} else {
		free(v2);
	}
	return push_step(p, &st, wd ? "WORKDIR" : "USER");
}

static bool port_ok(const char *s)
{
	const char *slash = strchr(s, '/');
	size_t len = slash ? (size_t)(slash - s) : strlen(s);
	if (slash && strcasecmp(slash, "/tcp") && strcasecmp(slash, "/udp") &&
	    strcasecmp(slash, "/sctp"))
		return false;
	if (!len || !isdigit((unsigned char)s[0]) || strspn(s, "0123456789-") != len)
		return false;
	char *end;
	unsigned long a = strtoul(s, &end, 10);
	if (!a || a > 65535)
		return false;
	if (end == s + len)
		return true;
	if (*end != '-' || !isdigit((unsigned char)end[1]))
		return false;
	unsigned long b = strtoul(end + 1, &end, 10);
	return b >= a && b <= 65535 && end == s + len;
}

int df_do_expose(struct parser *p, const char *kw, const char *rest)
{
	(void)kw;
	struct df_step st = { .kind = DF_EXPOSE };
	int r = df_words_at(p, rest, true, &st.args);
	if (!r && !st.args.n)
		r = df_perr(p, "EXPOSE needs a port");
	for (size_t i = 0; !r && i < st.args.n; i++) {
		if (!port_ok(st.args.v[i]))
			r = df_perr(p, "EXPOSE '%s' is not a port[-port][/tcp|udp|sctp]",
			            st.args.v[i]);
		else
			r = names(p, kv_set(&p->df->config.expose, st.args.v[i]));
	}
	if (r) {
		dockerfile_step_free(&st);
		return r;
	}
	return push_step(p, &st, "EXPOSE");
}

/* RUN, CMD and ENTRYPOINT: JSON or shell form, never substituted. */
int df_do_command(struct parser *p, const char *kw, const char *rest)
{
	enum df_kind kind = !strcasecmp(kw, "RUN")   ? DF_RUN
	                    : !strcasecmp(kw, "CMD") ? DF_CMD
	                                             : DF_ENTRYPOINT;
	const char *name = dockerfile_name(kind);
	struct df_step st = { .kind = kind };
	int r;
	if (kind == DF_RUN && !strncmp(rest, "--", 2))
		return df_perr(p, "RUN %.*s is not supported", (int)strcspn(rest, "= \t"), rest);
	if (!json_form(rest, &st.args, &r) && !r) {
		const char *h = heredoc(rest);
		if (!*rest)
			return df_perr(p, "%s needs a command", name);
		if (kind == DF_RUN && h)
			return df_perr(p, "heredocs (%.*s) are not supported",
			               (int)strcspn(h, " \t"), h);
		st.shell = true;
		r = df_list_push(&st.args, rest, strlen(rest));
		if (!r && asprintf(&st.text, "%s %s", name, rest) < 0)
			st.text = NULL, r = -ENOMEM;
	}
	if (!r && kind == DF_RUN && !st.args.n)
		r = df_perr(p, "RUN needs a command");
	struct df_config *c = &p->df->config;
	struct df_list *to = kind == DF_CMD ? &c->cmd : &c->entrypoint;
	if (!r && kind != DF_RUN) {
		df_list_free(to);
		if (st.shell && !(r = df_list_push(to, "/bin/sh", 7)))
			r = df_list_push(to, "-c", 2);
		for (size_t i = 0; !r && i < st.args.n; i++)
			r = df_list_push(to, st.args.v[i], strlen(st.args.v[i]));
		if (kind == DF_CMD)
			c->has_cmd = p->cmd_set = true;
		else
			c->has_entrypoint = true;
		if (kind == DF_ENTRYPOINT && !p->cmd_set) {
			df_list_free(&c->cmd);
			c->has_cmd = true;
		}
	}
	if (r) {
		dockerfile_step_free(&st);
		return r;
	}
	return push_step(p, &st, name);
}

static bool is_url(const char *s)
{
	size_t scheme =
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-");
	return (scheme && !strncmp(s + scheme, "://", 3)) || !strncmp(s, "git@", 4);
}

/* --chown=USER[:GROUP] after substitution. */
static int chown_arg(struct parser *p, struct df_copy *cp, const char *val)
{
	struct df_list w = { 0 };
	int r = df_words_at(p, val, false, &w);
	if (r)
		return r;
	char *colon = strchr(w.v[0], ':');
	if (colon)
		*colon = 0;
	if (!w.v[0][0] || (colon && !colon[1]))
		r = df_perr(p, "--chown='%s' needs USER[:GROUP]", val);
	else if (!(cp->chown_user = strdup(w.v[0])) ||
	         (colon && !(cp->chown_group = strdup(colon + 1))))
		r = -ENOMEM;
	for (int k = 0; !r && k < 2; k++) {
		const char *s = k ? cp->chown_group : cp->chown_user;
		long *id = k ? &cp->gid : &cp->uid;
		char *end;
		errno = 0;
		unsigned long v = s && isdigit((unsigned char)s[0]) ? strtoul(s, &end, 10) : 0;
		*id = s && isdigit((unsigned char)s[0]) && !*end && !errno && v < UINT32_MAX
		          ? (long)v
		          : -1;
	}
	df_list_free(&w);
	return r;
}

/* COPY and ADD's sources and destination (the df_words_at after the flags). */
static int copy_paths(struct parser *p, const char *kw, struct df_copy *cp, struct df_list *w)
{
	if (w->n < 2)
		return df_perr(p, "%s needs a source and a destination", kw);
	for (size_t i = 0; i + 1 < w->n; i++) {
		char path[PATH_MAX];
		const char *s = w->v[i];
		if (cp->add && is_url(s))
			return df_perr(p, "ADD from a URL is not supported ('%s')", s);
		if (!*s)
			return df_perr(p, "%s: a source is empty", kw);
		int c = clean_path(NULL, s + strspn(s, "/"), path);
		if (c)
			return df_perr(p, "%s source '%s' %s", kw, s,
			               c > 0 ? "leaves the context" : "is too long");
		int r = df_list_push(&cp->srcs, path, strlen(path));
		if (r)
			return r;
	}
	const char *d = w->v[w->n - 1];
	size_t dl = strlen(d);
	bool dir = !strcmp(d, ".") || !strcmp(d, "..") || (dl && d[dl - 1] == '/') ||
	           (dl >= 2 && !strcmp(d + dl - 2, "/.")) ||
	           (dl >= 3 && !strcmp(d + dl - 3, "/.."));
	char path[PATH_MAX];
	if (!dl)
		return df_perr(p, "%s: the destination is empty", kw);
	if (clean_path(p->workdir ? p->workdir : "/", d, path) || strlen(path) + 2 > PATH_MAX)
		return df_perr(p, "%s: the destination is too long", kw);
	if (dir && strcmp(path, "/"))
		strcat(path, "/");
	return (cp->dest = strdup(path)) ? 0 : -ENOMEM;
}

int df_do_copy(struct parser *p, const char *kw, const char *rest)
{
	bool add = !strcasecmp(kw, "ADD");
	const char *name = add ? "ADD" : "COPY";
	struct df_step st = { .kind = DF_COPY, .copy = { .add = add, .uid = -1, .gid = -1 } };
	struct df_list w = { 0 }, text = { 0 };
	int r = 0;
	while (!r && !strncmp(rest, "--", 2)) {
		size_t len = strcspn(rest, " \t");
		char flag[4096];
		snprintf(flag, sizeof(flag), "%.*s", (int)len, rest);
		if (!strncmp(flag, "--chown=", 8) && st.copy.chown_user)
			r = df_perr(p, "%s: --chown is given twice", name);
		else if (!strncmp(flag, "--chown=", 8))
			r = chown_arg(p, &st.copy, flag + 8);
		else if (!strncmp(flag, "--from", 6))
			r = df_perr(p, "%s --from is not supported (one stage only)", name);
		else
			r = df_perr(p, "%s %.*s is not supported", name, (int)strcspn(flag, "="),
			            flag);
		rest += len + strspn(rest + len, " \t");
	}
	struct df_list raw = { 0 };
	if (!r && json_form(rest, &raw, &r) && !r) {
		for (size_t i = 0; !r && i < raw.n; i++)
			r = df_words_at(p, raw.v[i], false, &w);
	} else if (!r && heredoc(rest)) {
		r = df_perr(p, "heredocs (%.*s) are not supported",
		            (int)strcspn(heredoc(rest), " \t"), heredoc(rest));
	} else if (!r) {
		r = df_words_at(p, rest, true, &w);
	}
	df_list_free(&raw);
	if (!r)
		r = copy_paths(p, name, &st.copy, &w);
	char *own = NULL;
	if (!r && st.copy.chown_user &&
	    asprintf(&own, "--chown=%s%s%s", st.copy.chown_user, st.copy.chown_group ? ":" : "",
	             st.copy.chown_group ? st.copy.chown_group : "") < 0)
		own = NULL, r = -ENOMEM;
	if (!r && own)
		r = df_list_push(&text, own, strlen(own));
	for (size_t i = 0; !r && i < st.copy.srcs.n; i++)
		r = df_list_push(&text, st.copy.srcs.v[i], strlen(st.copy.srcs.v[i]));
	if (!r)
		r = df_list_push(&text, st.copy.dest, strlen(st.copy.dest));
	if (!r && !(st.text = render(name, &text)))
		r = -ENOMEM;
	free(own);
	df_list_free(&text);
	df_list_free(&w);
	if (r) {
		dockerfile_step_free(&st);
		return r;
	}
	return push_step(p, &st, name);
}
