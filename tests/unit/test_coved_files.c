/* Unit tests: the archives template builds' COPY steps read
 * (daemon/sandboxes/build_files.c): a tar of files, folders and symlinks
 * unpacks into the tenant's folder for its hash; hostile ones (a path out
 * with "..", an absolute path, a hard link, a device, a write through a
 * symlink, too deep, too big, not a tar) are refused with one line and
 * leave nothing behind, in the folder or outside it; upload links are
 * good once.  The tars are made here with libarchive's writer. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/sandboxes/build_files.h"
#include "daemon/sandboxes/build_req.h"
#include "daemon/sandboxes/sandbox.h"
#include "daemon/sandboxes/state.h"
#include "daemon/sandboxes/table.h"
#include "unit.h"

/* Stand-ins for the sandbox table's ids and clock (table.c, sandbox.c). */
static unsigned int counter;
int coved_new_name(char *out, size_t n)
{
	snprintf(out, n + 1, "%0*u", (int)n, ++counter);
	return 0;
}
int coved_new_token(char *out)
{
	snprintf(out, COVED_TOKEN_LEN + 1, "%064u", ++counter);
	return 0;
}
int64_t coved_now_ms(void)
{
	return 1000;
}

static struct coved d;
static char root[64], err[512];

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

struct ent {
	const char *path;
	char type; /* f file, d folder, l symlink, h hard link, c device */
	const char *data;
};

/* A tar (gzip'ed) of es into a new file; its path. */
static const char *make_tar(const struct ent *es, size_t n)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/in.tar.gz", root);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_add_filter_gzip(a);
	ck_assert_int_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, es[i].path);
		archive_entry_set_perm(e, 0755);
		size_t len = es[i].data ? strlen(es[i].data) : 0;
		switch (es[i].type) {
		case 'f':
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_size(e, (la_int64_t)len);
			break;
		case 'd':
			archive_entry_set_filetype(e, AE_IFDIR);
			break;
		case 'l':
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_symlink(e, es[i].data);
			len = 0;
			break;
		case 'h':
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_hardlink(e, es[i].data);
			len = 0;
			break;
		default:
			archive_entry_set_filetype(e, AE_IFCHR);
			archive_entry_set_rdev(e, makedev(1, 3));
			len = 0;
		}
		ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
		if (len)
			ck_assert_int_eq(archive_write_data(a, es[i].data, len), (la_ssize_t)len);
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	return path;
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/cove-unit-files.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	char p[200];
	snprintf(p, sizeof(p), "%s/state", root);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/state/template-files", root);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/state/template-files/alice", root);
	mkdir(p, 0700);
	static char state[200];
	snprintf(state, sizeof(state), "%s/state", root);
	d.cfg.state_dir = state;
	ck_assert_int_eq(coved_files_init(&d), 0);
}

static void teardown(void)
{
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
	free(d.uploads);
	d.uploads = NULL;
}

/* The number of entries in the tenant's folder (uploads in flight too). */
static int entries(void)
{
	char p[200];
	snprintf(p, sizeof(p), "%s/state/template-files/alice", root);
	DIR *dir = opendir(p);
	ck_assert_ptr_nonnull(dir);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(dir)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(dir);
	return n;
}

static int unpack(const struct ent *es, size_t n, uint64_t max)
{
	const char *tar = make_tar(es, n);
	err[0] = 0;
	return coved_files_unpack(&d, "alice", HASH, tar, max, err, sizeof(err));
}

START_TEST(unpacks)
{
	const struct ent es[] = {
		{ "files", 'd', NULL },         { "files/a.txt", 'f', "hello\n" },
		{ "files/sub", 'd', NULL },     { "files/sub/b.txt", 'f', "deep\n" },
		{ "files/link", 'l', "a.txt" },
	};
	ck_assert(!coved_files_present(&d, "alice", HASH));
	ck_assert_int_eq(unpack(es, 5, 1 << 20), 0);
	ck_assert(coved_files_present(&d, "alice", HASH));
	ck_assert(!coved_files_present(&d, "bob", HASH));
	char dir[4400], p[4500], buf[32];
	coved_files_dir(&d, "alice", HASH, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/files/sub/b.txt", dir);
	int fd = open(p, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 5);
	close(fd);
	struct stat st;
	snprintf(p, sizeof(p), "%s/files/a.txt", dir);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0755);
	snprintf(p, sizeof(p), "%s/files/link", dir);
	ck_assert_int_eq(lstat(p, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(entries(), 1); /* the hash's folder, nothing in flight */
	/* The tar is used up. */
	snprintf(p, sizeof(p), "%s/in.tar.gz", root);
	ck_assert_int_eq(access(p, F_OK), -1);
	/* A second upload of the hash keeps the first. */
	const struct ent other[] = { { "x", 'f', "x" } };
	ck_assert_int_eq(unpack(other, 1, 1 << 20), 0);
	snprintf(p, sizeof(p), "%s/x", dir);
	ck_assert_int_eq(access(p, F_OK), -1);
	ck_assert_int_eq(entries(), 1);
}
END_TEST

static void refused(const struct ent *es, size_t n, uint64_t max, int code, const char *needle)
{
	ck_assert_int_eq(unpack(es, n, max), code);
	ck_assert_msg(strstr(err, needle), "'%s' lacks '%s'", err, needle);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert(!coved_files_present(&d, "alice", HASH));
	ck_assert_int_eq(entries(), 0);
}

START_TEST(hostile)
{
	const struct ent dotdot[] = { { "a/../../evil", 'f', "x" } };
	refused(dotdot, 1, 1 << 20, -EINVAL, "a/../../evil");
	const struct ent abs[] = { { "/tmp/cove-unit-evil", 'f', "x" } };
	refused(abs, 1, 1 << 20, -EINVAL, "relative path");
	ck_assert_int_eq(access("/tmp/cove-unit-evil", F_OK), -1);
	const struct ent hard[] = { { "a", 'f', "x" }, { "b", 'h', "a" } };
	refused(hard, 2, 1 << 20, -EINVAL, "'b'");
	const struct ent dev[] = { { "null", 'c', NULL } };
	refused(dev, 1, 1 << 20, -EINVAL, "'null'");
	char out[100];
	snprintf(out, sizeof(out), "%s", root); /* a folder outside the unpack's */
	const struct ent through[] = { { "x", 'l', out }, { "x/pwned", 'f', "x" } };
	refused(through, 2, 1 << 20, -EINVAL, "x/pwned");
	char p[200];
	snprintf(p, sizeof(p), "%s/pwned", root);
	ck_assert_int_eq(access(p, F_OK), -1);
	const struct ent big[] = { { "a", 'f', "0123456789" }, { "b", 'f', "0123456789" } };
	refused(big, 2, 15, -EFBIG, "over 15 bytes");
	char deep[600] = "";
	for (int i = 0; i < 130; i++)
		strcat(deep, "d/");
	strcat(deep, "f");
	const struct ent toodeep[] = { { deep, 'f', "x" } };
	refused(toodeep, 1, 1 << 20, -EINVAL, "relative path");
	/* Not a tar at all. */
	char junk[128];
	snprintf(junk, sizeof(junk), "%s/junk", root);
	int fd = open(junk, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_eq(write(fd, "this is no archive at all, not even close", 41), 41);
	close(fd);
	ck_assert_int_eq(coved_files_unpack(&d, "alice", HASH, junk, 1 << 20, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a tar archive"));
	ck_assert_int_eq(entries(), 0);
}
END_TEST

START_TEST(links)
{
	char t1[65], t2[65], tenant[COVED_TENANT_LEN + 1], hash[COVED_FILES_HASH_LEN + 1];
	ck_assert_int_eq(coved_upload_link(&d, "alice", HASH, t1), 0);
	ck_assert_int_eq(coved_upload_link(&d, "bob", HASH, t2), 0);
	ck_assert_str_ne(t1, t2);
	ck_assert(coved_upload_take(&d, t2, tenant, sizeof(tenant), hash, sizeof(hash)));
	ck_assert_str_eq(tenant, "bob");
	ck_assert_str_eq(hash, HASH);
	/* Once only; a token that was never given is no token. */
	ck_assert(!coved_upload_take(&d, t2, tenant, sizeof(tenant), hash, sizeof(hash)));
	t2[0] ^= 1;
	ck_assert(!coved_upload_take(&d, t2, tenant, sizeof(tenant), hash, sizeof(hash)));
	ck_assert(!coved_upload_take(&d, "short", tenant, sizeof(tenant), hash, sizeof(hash)));
	ck_assert(coved_upload_take(&d, t1, tenant, sizeof(tenant), hash, sizeof(hash)));
	ck_assert_str_eq(tenant, "alice");
	/* The table is bounded. */
	int n = 0;
	while (coved_upload_link(&d, "alice", HASH, t1) == 0)
		ck_assert_int_lt(++n, 100000);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(coved_upload_link(&d, "alice", HASH, t1), -ENOSPC);
}
END_TEST

/* What a COPY with a mode sets it on: E2B's builder's targets. */
START_TEST(mode_targets)
{
	const struct ent es[] = {
		{ "files", 'd', NULL },      { "files/a.txt", 'f', "a" },
		{ "files/it's", 'f', "q" },  { "files/sub", 'd', NULL },
		{ "files/sub/b", 'f', "b" }, { "top.sh", 'f', "#!/bin/sh" },
		{ "out", 'l', "/etc" },      { "empty", 'd', NULL },
		{ "ln", 'l', "top.sh" },
	};
	ck_assert_int_eq(unpack(es, sizeof(es) / sizeof(es[0]), 1 << 20), 0);
	char ctx[4400], out[512];
	coved_files_dir(&d, "alice", HASH, ctx, sizeof(ctx));
	ck_assert_int_eq(
	    coved_files_mode_targets(ctx, "top.sh", "/bin/", out, sizeof(out), err, sizeof(err)),
	    0);
	ck_assert_str_eq(out, "'/bin/top.sh'");
	ck_assert_int_eq(
	    coved_files_mode_targets(ctx, "top.sh", "/run.sh", out, sizeof(out), err, sizeof(err)),
	    0);
	ck_assert_str_eq(out, "'/run.sh'");
	int k = coved_files_mode_targets(ctx, "ln", "/b/", out, sizeof(out), err, sizeof(err));
	ck_assert_msg(k == 0, "%s", err);
	ck_assert_str_eq(out, "'/b/ln'"); /* the link's own name */
	ck_assert_int_eq(
	    coved_files_mode_targets(ctx, "files/sub/", "/s", out, sizeof(out), err, sizeof(err)),
	    0);
	ck_assert_str_eq(out, "'/s/b'");
	ck_assert_int_eq(
	    coved_files_mode_targets(ctx, "files", "/app", out, sizeof(out), err, sizeof(err)), 0);
	/* Each entry under dest, in the folder's order; a quote survives. */
	ck_assert_ptr_nonnull(strstr(out, "'/app/a.txt'"));
	ck_assert_ptr_nonnull(strstr(out, "'/app/sub'"));
	ck_assert_ptr_nonnull(strstr(out, "'/app/it'\\''s'"));
	ck_assert_ptr_null(strstr(out, "/app/sub/b"));
	ck_assert_int_eq(
	    coved_files_mode_targets(ctx, "empty", "/e/", out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(
	    coved_files_mode_targets(ctx, "files/*.txt", "/x/", out, sizeof(out), err, sizeof(err)),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "glob"));
	/* A link out is a link, named as itself; a path through it is not in. */
	ck_assert_int_eq(
	    coved_files_mode_targets(ctx, "out", "/x/", out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_str_eq(out, "'/x/out'");
	ck_assert_int_eq(
	    coved_files_mode_targets(ctx, "out/ssh", "/x/", out, sizeof(out), err, sizeof(err)),
	    -EINVAL);
	ck_assert_int_eq(
	    coved_files_mode_targets(ctx, "nope", "/x/", out, sizeof(out), err, sizeof(err)),
	    -EINVAL);
	ck_assert_int_eq(coved_files_mode_targets(ctx, "files", "/app", out, 20, err, sizeof(err)),
	                 -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "too long"));
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_files");
	TCase *tc = tcase_create("files");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, unpacks);
	tcase_add_test(tc, hostile);
	tcase_add_test(tc, links);
	tcase_add_test(tc, mode_targets);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
