/* Image builders for lib/image's unit tests (oci_images.c): blobs, layer
 * tars, whole single-layer images and index.json in an OCI layout
 * directory, and members of archives being written.  They fail the
 * running Check test on any error. */
#ifndef COVE_UNIT_OCI_IMAGES_H
#define COVE_UNIT_OCI_IMAGES_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/image/oci_json.h"

#define MT_INDEX    "application/vnd.oci.image.index.v1+json"
#define MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_CONFIG   "application/vnd.oci.image.config.v1+json"
#define MT_TAR      "application/vnd.oci.image.layer.v1.tar"

struct archive;

/* The digests of an image img_make wrote, and its manifest's size. */
struct img {
	char manifest[OCI_DIGEST_LEN + 1], config[OCI_DIGEST_LEN + 1], layer[OCI_DIGEST_LEN + 1];
	size_t manifest_size;
};

/* system() of a formatted command, which must succeed. */
void img_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "sha256:<hex>" of @n bytes at @b. */
void img_digest(const void *b, size_t n, char out[OCI_DIGEST_LEN + 1]);
void img_write_file(const char *path, const void *b, size_t n);
/* A blob into @layout's blobs/sha256 (made); its digest out. */
void img_put_blob(const char *layout, const void *b, size_t n, char dg[OCI_DIGEST_LEN + 1]);
/* A tar (malloc'ed, *@len bytes) with one file @name holding @content. */
char *img_tar(const char *name, const char *content, size_t *len);
/* One image in @layout: a layer with "hello" holding @env, a config (@os,
 * @arch, Env [@env], Cmd, WorkingDir /srv, User 1000); @layer_mt the
 * layer's media type, @size_delta added to its size in the manifest. */
void img_make_ex(const char *layout, const char *env, const char *os, const char *arch,
                 const char *layer_mt, int size_delta, struct img *im);
/* img_make_ex for linux, a tar layer, sizes right. */
void img_make(const char *layout, const char *env, const char *arch, struct img *im);
/* index.json over @descs (the inside of a JSON list), and oci-layout. */
void img_write_index(const char *layout, const char *descs);
/* A descriptor of @mt, tagged @tag and for linux/@arch (each may be NULL). */
void img_desc(char *out, size_t n, const char *mt, const char *dg, size_t size, const char *tag,
              const char *arch);
/* Members of an archive being written: bytes, a link (symlink, or hard
 * link when @hard), a file's content. */
void img_add_member(struct archive *a, const char *name, const void *b, size_t n);
void img_add_link(struct archive *a, const char *name, const char *target, bool hard);
void img_add_file(struct archive *a, const char *name, const char *path);

#endif
