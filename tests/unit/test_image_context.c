/* Unit tests: build contexts (lib/image/context.c): .dockerignore with
 * exceptions and "**", globs, folders, symlinks kept as symlinks or refused
 * by name when they leave the context, links in a source path, ADD's tar
 * archives (written here with libarchive), and hashes. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/image/context.h"
#include "unit.h"

static char dir[64];
static char err[600];

static void mk(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (!text) {
		ck_assert_int_eq(mkdir(p, 0755), 0);
		return;
	}
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void ln(const char *target, const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	ck_assert_int_eq(symlink(target, p), 0);
}

/* A tar of one file, written with libarchive (gzip when gz). */
static void mk_tar(const char *name, bool gz)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	if (gz)
		archive_write_add_filter_gzip(a);
	ck_assert_int_eq(archive_write_open_filename(a, p), ARCHIVE_OK);
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "hello.txt");
	archive_entry_set_size(e, 3);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_data(a, "hi\n", 3), 3);
	archive_entry_free(e);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/cove-ctx.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	mk(".dockerignore", "# build output\n"
	                    "  *.env  \n"
	                    "\n"
	                    "/build\n"
	                    "!build/keep.txt\n"
	                    "**/.cache\n"
	                    "docs/*.md\n"
	                    "! docs/README.md\n");
	mk("app", NULL);
	mk("app/main.py", "print(1)\n");
	mk("app/lib", NULL);
	mk("app/lib/util.py", "x = 1\n");
	mk("app/.cache", NULL);
	mk("app/.cache/blob", "junk");
	ln("main.py", "app/alias.py");
	mk("build", NULL);
	mk("build/out.o", "obj");
	mk("build/keep.txt", "keep");
	mk("docs", NULL);
	mk("docs/guide.md", "g");
	mk("docs/README.md", "r");
	mk("secret.env", "TOKEN=1");
	mk("notes", NULL);
	mk("notes/a.txt", "a");
	mk("notes/b.txt", "b");
	mk("notes/c.log", "c");
	mk_tar("data.tar", false);
	mk_tar("data.tgz", true);
	mk("plain.gz", "not gzip at all");
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static struct ctx c;

static void open_ctx(void)
{
	int r = ctx_open(&c, dir, err, sizeof(err));
	ck_assert_msg(r == 0, "%s", err);
}

/* Resolves one pattern; the entries' rel names joined by ' '. */
static int resolve(const char *pat, bool archives, struct ctx_files *f, char *names, size_t cap)
{
	*f = (struct ctx_files){ 0 };
	const char *pats[] = { pat };
	int r = ctx_resolve(&c, pats, 1, archives, f, err, sizeof(err));
	names[0] = 0;
	for (size_t i = 0; !r && i < f->n; i++) {
		if (i)
			strncat(names, " ", cap - strlen(names) - 1);
		strncat(names, f->v[i].rel, cap - strlen(names) - 1);
	}
	return r;
}

static void names_are(const char *pat, const char *want, size_t matches)
{
	struct ctx_files f;
	char names[512];
	int r = resolve(pat, false, &f, names, sizeof(names));
	ck_assert_msg(r == 0, "%s: %s", pat, err);
	ck_assert_str_eq(names, want);
	ck_assert_uint_eq(f.matches, matches);
	ctx_files_free(&f);
}

static void fails(const char *pat, int code, const char *want)
{
	struct ctx_files f;
	char names[512];
	ck_assert_int_eq(resolve(pat, false, &f, names, sizeof(names)), code);
	ck_assert_str_eq(err, want);
	ctx_files_free(&f);
}

START_TEST(dockerignore)
{
	open_ctx();
	ck_assert(ctx_ignored(&c, "secret.env"));
	ck_assert(ctx_ignored(&c, "build"));
	ck_assert(ctx_ignored(&c, "build/out.o")); /* its folder matches */
	ck_assert(!ctx_ignored(&c, "build/keep.txt"));
	ck_assert(ctx_ignored(&c, "app/.cache"));
	ck_assert(ctx_ignored(&c, "app/.cache/blob"));
	ck_assert(ctx_ignored(&c, "a/b/c/.cache/d"));
	ck_assert(ctx_ignored(&c, "docs/guide.md"));
	ck_assert(!ctx_ignored(&c, "docs/README.md"));
	ck_assert(!ctx_ignored(&c, "docs"));
	ck_assert(!ctx_ignored(&c, "app/main.py"));
	ck_assert(!ctx_ignored(&c, "sub/secret.env")); /* "*.env" is at the top only */
	ctx_close(&c);
	/* The last pattern that matches decides. */
	struct ctx t = { .rootfd = -1 };
	const char *text = "*\n!keep\nkeep/no\n";
	ck_assert_int_eq(ctx_ignore_parse(&t, text, strlen(text), err, sizeof(err)), 0);
	ck_assert(ctx_ignored(&t, "x"));
	ck_assert(!ctx_ignored(&t, "keep"));
	ck_assert(!ctx_ignored(&t, "keep/yes"));
	ck_assert(ctx_ignored(&t, "keep/no"));
	ck_assert(ctx_ignored(&t, "keep/no/deeper"));
	ctx_close(&t);
}
END_TEST

START_TEST(globs_and_folders)
{
	open_ctx();
	names_are("app", "alias.py lib lib/util.py main.py", 1);
	names_are("app/main.py", "main.py", 1);
	names_are("/app/./lib", "util.py", 1);
	names_are("notes/*.txt", "a.txt b.txt", 2);
	names_are("notes/?.log", "c.log", 1);
	names_are("notes/[ab].txt", "a.txt b.txt", 2);
	names_are("a*/m*.py", "main.py", 1);
	names_are("*/lib", "util.py", 1);
	fails("*/util.py", -ENOENT, "COPY source '*/util.py' matches nothing in the context");
	ctx_close(&c);
}
END_TEST

START_TEST(ignored_sources)
{
	open_ctx();
	/* build/ is ignored but keep.txt is an exception. */
	names_are("build", "keep.txt", 1);
	names_are("docs", "README.md", 1);
	fails("secret.env", -ENOENT, "COPY source 'secret.env' matches nothing in the context");
	fails("build/out.o", -ENOENT, "COPY source 'build/out.o' matches nothing in the context");
	fails("*.env", -ENOENT, "COPY source '*.env' matches nothing in the context");
	fails("../etc", -EINVAL, "COPY source '../etc' leaves the context");
	/* The whole context, less what is ignored. */
	struct ctx_files f;
	char names[1024];
	ck_assert_int_eq(resolve("", false, &f, names, sizeof(names)), 0);
	ck_assert_str_eq(names,
	                 ".dockerignore app app/alias.py app/lib app/lib/util.py app/main.py "
	                 "build/keep.txt data.tar data.tgz docs docs/README.md notes "
	                 "notes/a.txt notes/b.txt notes/c.log plain.gz");
	ctx_files_free(&f);
	ctx_close(&c);
}
END_TEST

START_TEST(symlinks)
{
	open_ctx();
	/* Inside the context: kept as a symlink, not followed. */
	struct ctx_files f;
	char names[512];
	ck_assert_int_eq(resolve("app/alias.py", false, &f, names, sizeof(names)), 0);
	ck_assert_uint_eq(f.n, 1);
	ck_assert(S_ISLNK(f.v[0].mode));
	ck_assert_str_eq(f.v[0].link, "main.py");
	ck_assert_str_eq(f.v[0].src, "app/alias.py");
	ctx_files_free(&f);
	ctx_close(&c);
	/* Out of the context: refused by name, at the top or deep in a folder. */
	ln("../../../etc/passwd", "app/lib/escape");
	open_ctx();
	fails("app", -EINVAL,
	      "COPY source 'app': symlink 'app/lib/escape' points out of the context "
	      "('../../../etc/passwd')");
	fails("app/lib/escape", -EINVAL,
	      "COPY source 'app/lib/escape': symlink 'app/lib/escape' points out of the context "
	      "('../../../etc/passwd')");
	ctx_close(&c);
	ln("/etc", "etc");
	ln("app", "applink");
	open_ctx();
	fails("etc", -EINVAL,
	      "COPY source 'etc': symlink 'etc' points out of the context ('/etc')");
	/* A link in a source path is not followed, even into the context. */
	fails("applink/main.py", -EINVAL,
	      "COPY source 'applink/main.py': 'applink' is a symlink (links in a source path are "
	      "not followed)");
	fails("etc/passwd", -EINVAL,
	      "COPY source 'etc/passwd': 'etc' is a symlink (links in a source path are not "
	      "followed)");
	ctx_close(&c);
}
END_TEST

START_TEST(archives_and_hashes)
{
	open_ctx();
	struct ctx_files f;
	char names[512];
	const char *want[][2] = { { "data.tar", "1" },
		                  { "data.tgz", "1" },
		                  { "plain.gz", "0" },
		                  { "app/main.py", "0" } };
	for (size_t i = 0; i < 4; i++) {
		ck_assert_int_eq(resolve(want[i][0], true, &f, names, sizeof(names)), 0);
		ck_assert_msg(f.v[0].archive == (want[i][1][0] == '1'), "%s", want[i][0]);
		ctx_files_free(&f);
		/* Only asked for by ADD. */
		ck_assert_int_eq(resolve(want[i][0], false, &f, names, sizeof(names)), 0);
		ck_assert(!f.v[0].archive);
		ctx_files_free(&f);
	}
	/* Files inside a folder are not unpacked. */
	mk("tars", NULL);
	mk_tar("tars/t.tar", false);
	ck_assert_int_eq(resolve("tars", true, &f, names, sizeof(names)), 0);
	ck_assert(!f.v[0].archive);
	ctx_files_free(&f);
	/* The hash follows content, names and modes. */
	uint8_t h[4][SHA256_LEN];
	ck_assert_int_eq(resolve("notes", false, &f, names, sizeof(names)), 0);
	memcpy(h[0], f.hash, SHA256_LEN);
	ctx_files_free(&f);
	mk("notes/a.txt", "A");
	ck_assert_int_eq(resolve("notes", false, &f, names, sizeof(names)), 0);
	memcpy(h[1], f.hash, SHA256_LEN);
	ctx_files_free(&f);
	char p[256], q[256];
	snprintf(p, sizeof(p), "%s/notes/c.log", dir);
	snprintf(q, sizeof(q), "%s/notes/d.log", dir);
	ck_assert_int_eq(rename(p, q), 0);
	ck_assert_int_eq(resolve("notes", false, &f, names, sizeof(names)), 0);
	memcpy(h[2], f.hash, SHA256_LEN);
	ctx_files_free(&f);
	ck_assert_int_eq(chmod(q, 0700), 0);
	ck_assert_int_eq(resolve("notes", false, &f, names, sizeof(names)), 0);
	memcpy(h[3], f.hash, SHA256_LEN);
	ctx_files_free(&f);
	for (int i = 0; i < 4; i++)
		for (int k = i + 1; k < 4; k++)
			ck_assert(memcmp(h[i], h[k], SHA256_LEN));
	ctx_close(&c);
}
END_TEST

START_TEST(step_keys)
{
	uint8_t zero[SHA256_LEN] = { 0 }, in[SHA256_LEN] = { 1 }, a[SHA256_LEN], b[SHA256_LEN];
	ctx_step_key(zero, "RUN x", zero, a);
	ctx_step_key(zero, "RUN x", zero, b);
	ck_assert(!memcmp(a, b, SHA256_LEN));
	ctx_step_key(zero, "RUN x", in, b);
	ck_assert(memcmp(a, b, SHA256_LEN));
	ctx_step_key(in, "RUN x", zero, b);
	ck_assert(memcmp(a, b, SHA256_LEN));
	ctx_step_key(zero, "RUN y", zero, b);
	ck_assert(memcmp(a, b, SHA256_LEN));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("image_context");
	TCase *tc = tcase_create("context");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, dockerignore);
	tcase_add_test(tc, globs_and_folders);
	tcase_add_test(tc, ignored_sources);
	tcase_add_test(tc, symlinks);
	tcase_add_test(tc, archives_and_hashes);
	tcase_add_test(tc, step_keys);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
