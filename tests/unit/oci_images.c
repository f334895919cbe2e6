/* Image builders for the unit tests of lib/image (test_image_oci.c):
 * OCI layouts written blob by blob, tars made with libarchive's writer.
 * Declared in oci_images.h. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "lib/base/sha256.h"
#include "oci_images.h"
#include "unit.h"

void img_run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
}

void img_digest(const void *b, size_t n, char out[OCI_DIGEST_LEN + 1])
{
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	char hex[SHA256_HEX];
	sha256_init(&h);
	sha256_update(&h, b, n);
	sha256_final(&h, d);
	sha256_hex(d, hex);
	snprintf(out, OCI_DIGEST_LEN + 1, "sha256:%s", hex);
}

void img_write_file(const char *path, const void *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b, n), (ssize_t)n);
	close(fd);
}

/* A blob into the layout; its digest out. */
void img_put_blob(const char *layout, const void *b, size_t n, char dg[OCI_DIGEST_LEN + 1])
{
	char p[256];
	snprintf(p, sizeof(p), "%s/blobs/sha256", layout);
	img_run("mkdir -p %s", p);
	img_digest(b, n, dg);
	snprintf(p, sizeof(p), "%s/blobs/sha256/%s", layout, dg + 7);
	img_write_file(p, b, n);
}

/* A tar with one file @name holding @content. */
char *img_tar(const char *name, const char *content, size_t *len)
{
	size_t cap = 64 << 10;
	char *buf = malloc(cap);
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	archive_write_set_format_pax_restricted(a);
	archive_write_add_filter_none(a);
	ck_assert_int_eq(archive_write_open_memory(a, buf, cap, len), ARCHIVE_OK);
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)strlen(content));
	ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_data(a, content, strlen(content)), (ssize_t)strlen(content));
	archive_entry_free(e);
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	return buf;
}

/* One image in the layout: a layer with /hello = @env's value, a config
 * (os, arch, Env [@env], Cmd ["/bin/hello"]); @layer_mt its layer's media
 * type; @size_delta added to the layer's size in the manifest.  The
 * manifest's digest and size out. */
void img_make_ex(const char *layout, const char *env, const char *os, const char *arch,
                 const char *layer_mt, int size_delta, struct img *im)
{
	size_t n;
	char *tar = img_tar("hello", env, &n);
	img_put_blob(layout, tar, n, im->layer);
	free(tar);
	char cfg[1024], man[1024];
	snprintf(cfg, sizeof(cfg),
	         "{\"os\":\"%s\",\"architecture\":\"%s\",\"config\":{\"Env\":[\"%s\"],"
	         "\"Cmd\":[\"/bin/hello\"],\"WorkingDir\":\"/srv\",\"User\":\"1000\"},"
	         "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\"]}}",
	         os, arch, env, im->layer);
	img_put_blob(layout, cfg, strlen(cfg), im->config);
	snprintf(man, sizeof(man),
	         "{\"schemaVersion\":2,\"mediaType\":\"" MT_MANIFEST "\","
	         "\"config\":{\"mediaType\":\"" MT_CONFIG "\",\"digest\":\"%s\",\"size\":%zu},"
	         "\"layers\":[{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%zu}]}",
	         im->config, strlen(cfg), layer_mt, im->layer, (size_t)((long)n + size_delta));
	img_put_blob(layout, man, strlen(man), im->manifest);
	im->manifest_size = strlen(man);
}

void img_make(const char *layout, const char *env, const char *arch, struct img *im)
{
	img_make_ex(layout, env, "linux", arch, MT_TAR, 0, im);
}

/* index.json over @descs (a JSON list's inside), and oci-layout. */
void img_write_index(const char *layout, const char *descs)
{
	char p[256], text[4096];
	snprintf(p, sizeof(p), "%s/index.json", layout);
	snprintf(text, sizeof(text), "{\"schemaVersion\":2,\"manifests\":[%s]}", descs);
	img_write_file(p, text, strlen(text));
	snprintf(p, sizeof(p), "%s/oci-layout", layout);
	img_write_file(p, "{\"imageLayoutVersion\":\"1.0.0\"}", 30);
}

/* A descriptor of a manifest (or index, @mt), tagged @tag (may be NULL),
 * for @arch (may be NULL), into @out. */
void img_desc(char *out, size_t n, const char *mt, const char *dg, size_t size, const char *tag,
              const char *arch)
{
	char ann[128] = "", plat[128] = "";
	if (tag)
		snprintf(ann, sizeof(ann),
		         ",\"annotations\":{\"org.opencontainers.image.ref.name\":\"%s\"}", tag);
	if (arch)
		snprintf(plat, sizeof(plat),
		         ",\"platform\":{\"os\":\"linux\",\"architecture\":\"%s\"}", arch);
	snprintf(out, n, "{\"mediaType\":\"%s\",\"digest\":\"%s\",\"size\":%zu%s%s}", mt, dg, size,
	         ann, plat);
}

/* Adds a member to an archive being written. */
void img_add_member(struct archive *a, const char *name, const void *b, size_t n)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)n);
	ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_data(a, b, n), (ssize_t)n);
	archive_entry_free(e);
}

/* Adds a symlink (@hard false) or hard link member. */
void img_add_link(struct archive *a, const char *name, const char *target, bool hard)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, name);
	archive_entry_set_perm(e, 0644);
	if (hard) {
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_hardlink(e, target);
	} else {
		archive_entry_set_filetype(e, AE_IFLNK);
		archive_entry_set_symlink(e, target);
	}
	ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
	archive_entry_free(e);
}

void img_add_file(struct archive *a, const char *name, const char *path)
{
	size_t n;
	struct stat st;
	int e;
	char *b = file_slurp(path, 1 << 20, &n, &st, &e);
	ck_assert_ptr_nonnull(b);
	img_add_member(a, name, b, n);
	free(b);
}
