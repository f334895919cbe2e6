/* Unit tests: Dockerfiles (lib/image/dockerfile.c): lines, comments,
 * continuations and the escape directive; JSON and shell forms; ENV and
 * ARG; substitution and its escapes; what is refused, with its line; the
 * final config; and the cache keys of steps over a build context. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/image/dockerfile.h"
#include "unit.h"

static char err[600];

static void parse_ok(const char *text, const char *const *args, size_t nargs, struct dockerfile *df)
{
	int r = dockerfile_parse(text, strlen(text), args, nargs, df, err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
}

/* The text must fail with exactly this message. */
static void parse_fails(const char *text, const char *want)
{
	struct dockerfile df;
	int r = dockerfile_parse(text, strlen(text), NULL, 0, &df, err, sizeof(err));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_str_eq(err, want);
	dockerfile_free(&df);
}

START_TEST(lines_comments_continuations)
{
	struct dockerfile df;
	parse_ok("# a comment\n"
	         "\n"
	         "from debian:12\r\n"
	         "  # indented comment\n"
	         "RUN apt-get update && \\\n"
	         "# comment inside a continuation\n"
	         "\n"
	         "    apt-get install -y x \\   \n"
	         "  && true\n"
	         "run echo end\\",
	         NULL, 0, &df);
	ck_assert_uint_eq(df.nsteps, 3);
	ck_assert_int_eq(df.steps[0].kind, DF_FROM);
	ck_assert_uint_eq(df.steps[0].line, 3);
	ck_assert_str_eq(df.steps[0].args.v[0], "debian:12");
	ck_assert_int_eq(df.steps[1].kind, DF_RUN);
	ck_assert_uint_eq(df.steps[1].line, 5);
	ck_assert(df.steps[1].shell);
	ck_assert_str_eq(df.steps[1].args.v[0],
	                 "apt-get update &&     apt-get install -y x   && true");
	ck_assert_str_eq(df.steps[1].text,
	                 "RUN apt-get update &&     apt-get install -y x   && true");
	ck_assert_uint_eq(df.steps[2].line, 10);
	ck_assert_str_eq(df.steps[2].args.v[0], "echo end");
	dockerfile_free(&df);
}
END_TEST

START_TEST(escape_directive)
{
	struct dockerfile df;
	parse_ok("# escape=`\n"
	         "FROM x\n"
	         "RUN dir c:\\ `\n"
	         "  && echo ok\n"
	         "ENV A=`$HOME B=c:\\dir\n",
	         NULL, 0, &df);
	ck_assert_str_eq(df.steps[1].args.v[0], "dir c:\\   && echo ok");
	ck_assert_str_eq(df.config.env.v[0], "A=$HOME");
	ck_assert_str_eq(df.config.env.v[1], "B=c:\\dir");
	dockerfile_free(&df);
	parse_ok("\xef\xbb\xbf# escape=`\nFROM x\nENV A=`$B\n", NULL, 0, &df);
	ck_assert_str_eq(df.config.env.v[0], "A=$B");
	dockerfile_free(&df);
	/* A directive after a comment is a comment: the escape stays '\'. */
	parse_ok("# hello\n# escape=`\nFROM x\nENV A=\\$B\n", NULL, 0, &df);
	ck_assert_str_eq(df.config.env.v[0], "A=$B");
	dockerfile_free(&df);
	parse_fails("# escape=x\nFROM x\n",
	            "Dockerfile:1: escape directive: 'x' is neither '\\' nor '`'");
	parse_fails("# escape=`\n# escape=\\\nFROM x\n",
	            "Dockerfile:2: only one escape directive may be given");
}
END_TEST

START_TEST(json_and_shell_forms)
{
	struct dockerfile df;
	parse_ok("FROM x\n"
	         "RUN [\"/bin/echo\", \"a b\", \"$HOME\"]\n"
	         "RUN [not json\n"
	         "ENTRYPOINT [\"/srv/run\"]\n"
	         "CMD python3 -m http.server $PORT\n",
	         NULL, 0, &df);
	ck_assert(!df.steps[1].shell);
	ck_assert_uint_eq(df.steps[1].args.n, 3);
	ck_assert_str_eq(df.steps[1].args.v[1], "a b");
	ck_assert_str_eq(df.steps[1].args.v[2], "$HOME"); /* never substituted */
	ck_assert_str_eq(df.steps[1].text, "RUN [\"/bin/echo\",\"a b\",\"$HOME\"]");
	ck_assert(df.steps[2].shell);
	ck_assert_str_eq(df.steps[2].args.v[0], "[not json");
	ck_assert(df.config.has_entrypoint && df.config.has_cmd);
	ck_assert_uint_eq(df.config.entrypoint.n, 1);
	ck_assert_uint_eq(df.config.cmd.n, 3);
	ck_assert_str_eq(df.config.cmd.v[0], "/bin/sh");
	ck_assert_str_eq(df.config.cmd.v[1], "-c");
	ck_assert_str_eq(df.config.cmd.v[2], "python3 -m http.server $PORT");
	dockerfile_free(&df);
	/* ENTRYPOINT with no CMD before it clears the base image's CMD. */
	parse_ok("FROM x\nENTRYPOINT [\"/e\"]\n", NULL, 0, &df);
	ck_assert(df.config.has_cmd && df.config.cmd.n == 0);
	dockerfile_free(&df);
	parse_ok("FROM x\nCMD [\"a\"]\nENTRYPOINT /e\n", NULL, 0, &df);
	ck_assert_uint_eq(df.config.cmd.n, 1);
	ck_assert_str_eq(df.config.entrypoint.v[2], "/e");
	dockerfile_free(&df);
}
END_TEST

START_TEST(env_forms)
{
	struct dockerfile df;
	parse_ok("FROM x\n"
	         "ENV A=1 B=\"two words\" C='$A' D=\\$A\n"
	         "ENV PATH /opt/bin:$PATH\n"
	         "ENV A=3 E=$A\n" /* E sees the A before this line */
	         "ENV   F   spaced   out  value \n",
	         NULL, 0, &df);
	const struct df_list *e = &df.config.env;
	ck_assert_uint_eq(e->n, 7);
	ck_assert_str_eq(e->v[0], "A=3");
	ck_assert_str_eq(e->v[1], "B=two words");
	ck_assert_str_eq(e->v[2], "C=$A");
	ck_assert_str_eq(e->v[3], "D=$A");
	ck_assert_str_eq(e->v[4], "PATH=/opt/bin:");
	ck_assert_str_eq(e->v[5], "E=1");
	ck_assert_str_eq(e->v[6], "F=spaced   out  value");
	ck_assert_str_eq(df.steps[1].text, "ENV [\"A=1\",\"B=two words\",\"C=$A\",\"D=$A\"]");
	dockerfile_free(&df);
	parse_fails("FROM x\nENV A=1 B\n", "Dockerfile:2: ENV 'B' is not KEY=VALUE");
	parse_fails("FROM x\nENV A\n", "Dockerfile:2: ENV needs KEY=VALUE");
	parse_fails("FROM x\nENV A=\"open\n", "Dockerfile:2: unterminated double quote");
}
END_TEST

START_TEST(arg_defaults_and_overrides)
{
	const char *args[] = { "V=2.0", "UNUSED=1", "B=" };
	struct dockerfile df;
	parse_ok("ARG V=1.0\n"
	         "ARG REG=docker.io\n"
	         "FROM $REG/python:${V}-slim\n"
	         "ARG V\n" /* inherits the value given before FROM */
	         "ARG REG\n"
	         "ARG N=7 B=x U\n"
	         "ENV N=env\n"
	         "WORKDIR /w/$V/$N/${B:-empty}/${U:-unset}\n",
	         args, 3, &df);
	ck_assert_str_eq(df.steps[0].args.v[0], "docker.io/python:2.0-slim");
	ck_assert_int_eq(df.steps[1].kind, DF_ARG);
	ck_assert_str_eq(df.steps[1].args.v[0], "V=2.0");
	ck_assert_str_eq(df.steps[3].args.v[0], "N=7");
	ck_assert_str_eq(df.steps[3].args.v[1], "B=");
	ck_assert_str_eq(df.steps[3].args.v[2], "U");
	ck_assert_str_eq(df.steps[3].text, "ARG [\"N=7\",\"B=\",\"U\"]");
	/* ENV wins over ARG; an empty build arg is set but empty. */
	ck_assert_str_eq(df.config.workdir, "/w/2.0/env/empty/unset");
	dockerfile_free(&df);
	/* An ARG after FROM is not visible in FROM; one before is not after. */
	parse_ok("FROM x:${T:-none}\nARG T=1\nUSER $T\n", NULL, 0, &df);
	ck_assert_str_eq(df.steps[0].args.v[0], "x:none");
	ck_assert_str_eq(df.config.user, "1");
	dockerfile_free(&df);
	parse_ok("ARG T=1\nFROM x\nUSER u$T\n", NULL, 0, &df);
	ck_assert_str_eq(df.config.user, "u");
	dockerfile_free(&df);
}
END_TEST

START_TEST(substitution)
{
	struct dockerfile df;
	parse_ok("FROM x\n"
	         "ENV S=set E=\n"
	         "LABEL a=$S b=${S} c=${S:-d} d=${E:-d} e=${E-d} f=${NO-d}\n"
	         "LABEL g=${S:+alt} h=${E:+alt} i=${E+alt} j=${NO+alt}\n"
	         "LABEL k=$$S l=\\$S m=\"\\$S\" n='$S' o=\"$S x\" p=a$ q=${S:-${NO:-deep}}\n"
	         "LABEL r=${NO:-${S}} s=$S_x t=${S}_x u=\"\\q\" v=\\q\n",
	         NULL, 0, &df);
	const char *want[] = { "a=set", "b=set",   "c=set",   "d=d",  "e=",    "f=d",
		               "g=alt", "h=",      "i=alt",   "j=",   "k=$S",  "l=$S",
		               "m=$S",  "n=$S",    "o=set x", "p=a$", "q=set", "r=set",
		               "s=",    "t=set_x", "u=\\q",   "v=q" };
	ck_assert_uint_eq(df.config.labels.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_str_eq(df.config.labels.v[i], want[i]);
	dockerfile_free(&df);
	parse_fails("FROM x\nUSER ${\n", "Dockerfile:2: bad substitution: '${' needs a name");
	parse_fails("FROM x\nUSER ${A\n",
	            "Dockerfile:2: bad substitution in '${A': only :- :+ :? - + ?");
	parse_fails("FROM x\nUSER ${A:-x\n", "Dockerfile:2: unterminated '${A'");
	parse_fails("FROM x\nUSER ${A%x}\n",
	            "Dockerfile:2: bad substitution in '${A': only :- :+ :? - + ?");
	parse_fails("FROM x\nUSER ${A:?must be set}\n", "Dockerfile:2: A: must be set");
	/* Doubling a variable runs into the word limit (the word "A=..." passes
	 * 64 KiB at the 12th), not memory. */
	char big[4096] = "FROM x\nENV A=aaaaaaaaaaaaaaaa\n";
	for (int i = 0; i < 30; i++)
		strcat(big, "ENV A=$A$A\n");
	parse_fails(big, "Dockerfile:14: a word is over 64 KiB");
}
END_TEST

START_TEST(refused)
{
	parse_fails("FROM x\nRUN true\nHEALTHCHECK CMD true\n",
	            "Dockerfile:3: HEALTHCHECK is not supported");
	parse_fails("FROM x\n\nvolume /data\n", "Dockerfile:3: VOLUME is not supported");
	parse_fails("FROM x\nONBUILD RUN x\n", "Dockerfile:2: ONBUILD is not supported");
	parse_fails("FROM x\nSHELL [\"/bin/bash\"]\n", "Dockerfile:2: SHELL is not supported");
	parse_fails("FROM x\nSTOPSIGNAL 9\n", "Dockerfile:2: STOPSIGNAL is not supported");
	parse_fails("FROM x\nMAINTAINER me\n", "Dockerfile:2: MAINTAINER is not supported");
	parse_fails("FROM x\nFETCH y\n", "Dockerfile:2: unknown instruction 'FETCH'");
	parse_fails("FROM a\nRUN x \\\n  y\nFROM b\n",
	            "Dockerfile:4: a second FROM (multi-stage builds) is not supported");
	parse_fails("FROM a AS build\n",
	            "Dockerfile:1: FROM ... AS build: named stages are not supported");
	parse_fails("FROM --platform=linux/arm64 a\n",
	            "Dockerfile:1: FROM --platform is not supported");
	parse_fails("RUN x\nFROM a\n", "Dockerfile:1: RUN before FROM");
	parse_fails("# only\n", "Dockerfile:1: no FROM instruction");
	parse_fails("FROM a\nCOPY --from=build /x /y\n",
	            "Dockerfile:2: COPY --from is not supported (one stage only)");
	parse_fails("FROM a\nCOPY --chmod=755 x /y\n",
	            "Dockerfile:2: COPY --chmod is not supported");
	parse_fails("FROM a\n\nADD https://example.com/x.tgz /opt/\n",
	            "Dockerfile:3: ADD from a URL is not supported ('https://example.com/x.tgz')");
	parse_fails("FROM a\nADD git@github.com:x/y.git /src\n",
	            "Dockerfile:2: ADD from a URL is not supported ('git@github.com:x/y.git')");
	parse_fails("FROM a\nRUN <<EOF\necho hi\nEOF\n",
	            "Dockerfile:2: heredocs (<<EOF) are not supported");
	parse_fails("FROM a\nRUN cat <<-'END' > /x\n",
	            "Dockerfile:2: heredocs (<<-'END') are not supported");
	parse_fails("FROM a\nCOPY <<EOF /x\n", "Dockerfile:2: heredocs (<<EOF) are not supported");
	parse_fails("FROM a\nRUN --mount=type=cache,target=/x true\n",
	            "Dockerfile:2: RUN --mount is not supported");
	parse_fails("FROM a\nCOPY x\n", "Dockerfile:2: COPY needs a source and a destination");
	parse_fails("FROM a\nCOPY --chown=1 --chown=2 x /y\n",
	            "Dockerfile:2: COPY: --chown is given twice");
	parse_fails("FROM a\nCOPY ../x /y\n",
	            "Dockerfile:2: COPY source '../x' leaves the context");
	parse_fails("FROM a\nEXPOSE 80/xyz\n",
	            "Dockerfile:2: EXPOSE '80/xyz' is not a port[-port][/tcp|udp|sctp]");
	parse_fails("FROM a\nRUN\n", "Dockerfile:2: RUN needs a command");
	parse_fails("FROM a\nRUN []\n", "Dockerfile:2: RUN needs a command");
	struct dockerfile nul;
	ck_assert_int_eq(dockerfile_parse("FROM a\0\n", 8, NULL, 0, &nul, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_str_eq(err, "Dockerfile: a NUL byte");
	dockerfile_free(&nul);
	/* A shell's own << that is not a heredoc word stays. */
	struct dockerfile df;
	parse_ok("FROM a\nRUN echo $((1<<2)) && x=a<<b\n", NULL, 0, &df);
	dockerfile_free(&df);
}
END_TEST

START_TEST(copy_fields)
{
	struct dockerfile df;
	parse_ok("FROM a\n"
	         "COPY app.py /srv/\n"
	         "WORKDIR /srv\n"
	         "WORKDIR sub/../app\n"
	         "ARG OWNER=1000\n"
	         "COPY --chown=$OWNER:web [\"a b\", \"/c/./d\", \"dst\"]\n"
	         "ADD --chown=app x.tar .\n"
	         "COPY . ..\n",
	         NULL, 0, &df);
	const struct df_copy *c = &df.steps[1].copy;
	ck_assert(!c->add);
	ck_assert_str_eq(c->srcs.v[0], "app.py");
	ck_assert_str_eq(c->dest, "/srv/");
	ck_assert_ptr_null(c->chown_user);
	ck_assert_str_eq(df.config.workdir, "/srv/app");
	c = &df.steps[5].copy;
	ck_assert_str_eq(c->srcs.v[0], "a b");
	ck_assert_str_eq(c->srcs.v[1], "c/d");
	ck_assert_str_eq(c->dest, "/srv/app/dst");
	ck_assert_str_eq(c->chown_user, "1000");
	ck_assert_str_eq(c->chown_group, "web");
	ck_assert_int_eq(c->uid, 1000);
	ck_assert_int_eq(c->gid, -1);
	ck_assert_str_eq(df.steps[5].text,
	                 "COPY [\"--chown=1000:web\",\"a b\",\"c/d\",\"/srv/app/dst\"]");
	c = &df.steps[6].copy;
	ck_assert(c->add);
	ck_assert_str_eq(c->chown_user, "app");
	ck_assert_ptr_null(c->chown_group);
	ck_assert_int_eq(c->uid, -1);
	ck_assert_str_eq(c->dest, "/srv/app/");
	ck_assert_str_eq(df.steps[6].text, "ADD [\"--chown=app\",\"x.tar\",\"/srv/app/\"]");
	c = &df.steps[7].copy;
	ck_assert_str_eq(c->srcs.v[0], "");
	ck_assert_str_eq(c->dest, "/srv/");
	dockerfile_free(&df);
}
END_TEST

START_TEST(bounds)
{
	/* 1025 instructions. */
	size_t cap = 1100 * 8;
	char *t = malloc(cap);
	strcpy(t, "FROM x\n");
	for (int i = 0; i < 1024; i++)
		strcat(t, "USER u\n");
	struct dockerfile df;
	int r = dockerfile_parse(t, strlen(t), NULL, 0, &df, err, sizeof(err));
	ck_assert_int_eq(r, -EINVAL);
	ck_assert_str_eq(err, "Dockerfile:1025: over 1024 instructions");
	dockerfile_free(&df);
	free(t);
	r = dockerfile_parse("FROM x", DF_BYTES_MAX + 1, NULL, 0, &df, err, sizeof(err));
	ck_assert_int_eq(r, -EINVAL);
	/* Names per table are bounded (lookups stay cheap on a 1 MiB file). */
	char *many = malloc(16 * 600 + 32);
	strcpy(many, "FROM x\nENV");
	for (int i = 0; i < 600; i++)
		sprintf(many + strlen(many), " V%d=1", i);
	strcat(many, "\n");
	parse_fails(many, "Dockerfile:2: over 512 names in ENV, ARG, LABEL or EXPOSE");
	free(many);
	/* Deep nesting stops at DF_NEST_MAX. */
	char deep[512] = "FROM x\nUSER ";
	for (int i = 0; i < 20; i++)
		strcat(deep, "${A:-");
	for (int i = 0; i < 20; i++)
		strcat(deep, "}");
	parse_fails(deep, "Dockerfile:2: substitutions nested over 16 deep");
}
END_TEST

/* ---- keys over a build context ---------------------------------------------- */

static char ctxdir[64];

static void put_file(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", ctxdir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	snprintf(ctxdir, sizeof(ctxdir), "/tmp/cove-df.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(ctxdir));
	char p[256];
	snprintf(p, sizeof(p), "%s/app", ctxdir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	put_file("app/main.py", "print('hi')\n");
	put_file("req.txt", "flask\n");
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", ctxdir);
	ck_assert_int_eq(system(cmd), 0);
}

static const char *const base_file = "FROM debian:12\n"
                                     "ENV HOME=/root\n"
                                     "COPY req.txt /srv/\n"
                                     "RUN pip install -r /srv/req.txt\n"
                                     "COPY app /srv/app/\n"
                                     "RUN python3 -m compileall /srv/app\n";

/* The keys of text over the context, in keys[0..n). */
static size_t keys_of(const char *text, uint8_t keys[][SHA256_LEN])
{
	struct dockerfile df;
	parse_ok(text, NULL, 0, &df);
	int r = dockerfile_resolve(&df, ctxdir, "sha256:0123", err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
	for (size_t i = 0; i < df.nsteps; i++)
		memcpy(keys[i], df.steps[i].key, SHA256_LEN);
	size_t n = df.nsteps;
	dockerfile_free(&df);
	return n;
}

/* keys a and b agree on steps [0, from) and differ on [from, n). */
static void differ_from(uint8_t a[][SHA256_LEN], uint8_t b[][SHA256_LEN], size_t n, size_t from)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg((memcmp(a[i], b[i], SHA256_LEN) == 0) == (i < from),
		              "step %zu: keys %s", i, i < from ? "differ" : "agree");
}

START_TEST(keys_edit_last_run)
{
	uint8_t a[6][SHA256_LEN], b[6][SHA256_LEN];
	ck_assert_uint_eq(keys_of(base_file, a), 6);
	/* Same input, same keys. */
	ck_assert_uint_eq(keys_of(base_file, b), 6);
	differ_from(a, b, 6, 6);
	char edited[512];
	snprintf(edited, sizeof(edited), "%s", base_file);
	strcpy(strstr(edited, "compileall"), "compileall -q /srv/app\n");
	ck_assert_uint_eq(keys_of(edited, b), 6);
	differ_from(a, b, 6, 5);
	/* A comment or a blank line changes nothing. */
	snprintf(edited, sizeof(edited), "# note\n%s\n\n", base_file);
	keys_of(edited, b);
	differ_from(a, b, 6, 6);
}
END_TEST

START_TEST(keys_context_change)
{
	uint8_t a[6][SHA256_LEN], b[6][SHA256_LEN];
	keys_of(base_file, a);
	/* app/ is read by step 4 (the second COPY): it and what follows change. */
	put_file("app/main.py", "print('hello')\n");
	keys_of(base_file, b);
	differ_from(a, b, 6, 4);
	/* A new file under app/ too. */
	keys_of(base_file, a);
	put_file("app/extra.py", "\n");
	keys_of(base_file, b);
	differ_from(a, b, 6, 4);
	/* req.txt is read by step 2. */
	keys_of(base_file, a);
	put_file("req.txt", "flask==3\n");
	keys_of(base_file, b);
	differ_from(a, b, 6, 2);
	/* A mode counts. */
	keys_of(base_file, a);
	char p[256];
	snprintf(p, sizeof(p), "%s/req.txt", ctxdir);
	ck_assert_int_eq(chmod(p, 0600), 0);
	keys_of(base_file, b);
	differ_from(a, b, 6, 2);
	/* The base image's digest is FROM's input. */
	struct dockerfile df;
	parse_ok(base_file, NULL, 0, &df);
	ck_assert_int_eq(dockerfile_resolve(&df, ctxdir, "sha256:other", err, sizeof(err)), 0);
	ck_assert(memcmp(df.steps[0].key, b[0], SHA256_LEN) != 0);
	ck_assert(memcmp(df.steps[5].key, b[5], SHA256_LEN) != 0);
	dockerfile_free(&df);
	/* A build arg that changes an ARG changes it and what follows. */
	const char *x1[] = { "X=1" }, *x2[] = { "X=2" };
	const char *t = "FROM a\nRUN one\nARG X=0\nRUN two\n";
	struct dockerfile d1, d2;
	parse_ok(t, x1, 1, &d1);
	parse_ok(t, x2, 1, &d2);
	ck_assert_int_eq(dockerfile_resolve(&d1, NULL, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(dockerfile_resolve(&d2, NULL, NULL, err, sizeof(err)), 0);
	ck_assert(!memcmp(d1.steps[1].key, d2.steps[1].key, SHA256_LEN));
	ck_assert(memcmp(d1.steps[2].key, d2.steps[2].key, SHA256_LEN));
	ck_assert(memcmp(d1.steps[3].key, d2.steps[3].key, SHA256_LEN));
	dockerfile_free(&d1);
	dockerfile_free(&d2);
}
END_TEST

START_TEST(resolve_errors)
{
	struct dockerfile df;
	parse_ok("FROM a\nRUN x\nCOPY nothere /x\n", NULL, 0, &df);
	ck_assert_int_eq(dockerfile_resolve(&df, ctxdir, NULL, err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "Dockerfile:3: COPY source 'nothere' matches nothing in the context");
	dockerfile_free(&df);
	parse_ok("FROM a\nCOPY req.txt app /x\n", NULL, 0, &df);
	ck_assert_int_eq(dockerfile_resolve(&df, ctxdir, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(
	    err, "Dockerfile:2: COPY with several sources needs a destination ending in '/'");
	dockerfile_free(&df);
	parse_ok("FROM a\nCOPY req.txt /x\n", NULL, 0, &df);
	ck_assert_int_eq(dockerfile_resolve(&df, NULL, NULL, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "Dockerfile:2: COPY needs a build context");
	dockerfile_free(&df);
	char p[256], t[256];
	snprintf(p, sizeof(p), "%s/out", ctxdir);
	ck_assert_int_eq(symlink("/etc/shadow", p), 0);
	parse_ok("FROM a\n\nCOPY o* /x/\n", NULL, 0, &df);
	ck_assert_int_eq(dockerfile_resolve(&df, ctxdir, NULL, err, sizeof(err)), -EINVAL);
	snprintf(t, sizeof(t),
	         "Dockerfile:3: COPY source 'o*': symlink 'out' points out of the "
	         "context ('/etc/shadow')");
	ck_assert_str_eq(err, t);
	dockerfile_free(&df);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("image_dockerfile");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, lines_comments_continuations);
	tcase_add_test(tc, escape_directive);
	tcase_add_test(tc, json_and_shell_forms);
	tcase_add_test(tc, env_forms);
	tcase_add_test(tc, arg_defaults_and_overrides);
	tcase_add_test(tc, substitution);
	tcase_add_test(tc, refused);
	tcase_add_test(tc, copy_fields);
	tcase_add_test(tc, bounds);
	suite_add_tcase(s, tc);
	TCase *tk = tcase_create("keys");
	tcase_add_checked_fixture(tk, setup, teardown);
	tcase_add_test(tk, keys_edit_last_run);
	tcase_add_test(tk, keys_context_change);
	tcase_add_test(tk, resolve_errors);
	suite_add_tcase(s, tk);
	return s;
}

UNIT_MAIN()
