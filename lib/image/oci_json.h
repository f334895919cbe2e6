/* The JSON documents of container images (oci_json.c): an OCI image
 * index (index.json, or an index blob), an image manifest (OCI or Docker
 * schema 2), an image config, and a docker-archive's manifest.json.  Pure:
 * text in, checked values out; every parser is fuzzed (fuzz_oci_json).
 * Each parser fails with -EINVAL (-ENOMEM) and a one-line message, and
 * then leaves nothing to free. */
#ifndef COVE_IMAGE_OCI_JSON_H
#define COVE_IMAGE_OCI_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OCI_JSON_MAX     (4 << 20)     /* bytes of one JSON document */
#define OCI_DIGEST_LEN   (7 + 64)      /* "sha256:" and 64 lower-case hex digits */
#define OCI_MEDIA_MAX    128           /* bytes of a media type we accept */
#define OCI_PLATFORM_MAX 32            /* bytes of an os or architecture name */
#define OCI_INDEX_MAX    1024          /* manifests in one index */
#define OCI_LAYERS_MAX   256           /* layers of one image */
#define OCI_ENV_MAX      1024          /* Env entries of a config */
#define OCI_ARGV_MAX     1024          /* Entrypoint or Cmd words */
#define OCI_STRING_MAX   65536         /* bytes of one Env entry or word */
#define OCI_NAME_MAX     4096          /* bytes of WorkingDir, User, a ref name, a path */
#define OCI_BLOB_MAX     (64ULL << 30) /* bytes of one blob */

/* What a media type names. */
enum oci_kind { OCI_KIND_INDEX, OCI_KIND_MANIFEST, OCI_KIND_CONFIG, OCI_KIND_LAYER };
/* A layer's compression. */
enum oci_comp { OCI_COMP_NONE, OCI_COMP_GZIP, OCI_COMP_ZSTD };

/* A content descriptor.  Platform fields are "" when absent. */
struct oci_desc {
	char media_type[OCI_MEDIA_MAX];
	char digest[OCI_DIGEST_LEN + 1];
	uint64_t size;
	char *ref_name; /* org.opencontainers.image.ref.name, or NULL */
	char os[OCI_PLATFORM_MAX], arch[OCI_PLATFORM_MAX];
};

struct oci_index {
	struct oci_desc *m;
	size_t n;
};

struct oci_manifest {
	struct oci_desc config;
	struct oci_desc *layers;
	size_t n_layers;
};

/* What a container runs, from the config's "config" object; every string
 * malloc'ed, arrays NULL when empty (freed by image_config_free). */
struct image_config {
	char **env; /* "KEY=VALUE" */
	size_t n_env;
	char *workdir, *user; /* NULL when unset */
	char **entrypoint;
	size_t n_entrypoint;
	char **cmd;
	size_t n_cmd;
};

/* A docker-archive's manifest.json (one image): member paths, "./" dropped. */
struct docker_manifest {
	char *config;
	char **layers;
	size_t n_layers;
};

/* oci_digest_valid() - whether @s is "sha256:" and 64 lower-case hex
 * digits (the only algorithm read). */
bool oci_digest_valid(const char *s);

/* oci_media_kind() - what the media type @mt names, and for a layer its
 * compression (@comp may be NULL).  Return: an enum oci_kind, or -1 for a
 * type not read (foreign and non-distributable layers among them). */
int oci_media_kind(const char *mt, enum oci_comp *comp);

/* oci_parse_index() - an image index: its manifests (each a manifest or a
 * nested index by media type, with a valid digest and size), at most
 * OCI_INDEX_MAX.  Free with oci_index_free. */
int oci_parse_index(const char *text, size_t len, struct oci_index *ix, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void oci_index_free(struct oci_index *ix);

/* oci_index_pick() - the entry of @ix to read: with @tag, the one whose
 * ref name is @tag; without, the only one.  Several left: the one for
 * linux/amd64, if exactly one is.  Return: 0 (*@which set) or -EINVAL or
 * -ENOENT with a message naming @what (e.g. "index.json"). */
int oci_index_pick(const struct oci_index *ix, const char *tag, const char *what, size_t *which,
                   char *err, size_t errlen) __attribute__((warn_unused_result));

/* oci_parse_manifest() - an image manifest (schemaVersion 2; a
 * "mediaType" present must be @want_type, the type its descriptor gave,
 * when @want_type is not NULL): its config and its layers (1 to
 * OCI_LAYERS_MAX, each of a layer type read).  Free with
 * oci_manifest_free. */
int oci_parse_manifest(const char *text, size_t len, const char *want_type, struct oci_manifest *m,
                       char *err, size_t errlen) __attribute__((warn_unused_result));
void oci_manifest_free(struct oci_manifest *m);

/* oci_parse_config() - an image config for linux/amd64 (another os or
 * architecture is refused naming it): what it runs into @c, and the
 * rootfs' diff_ids (malloc'ed array, *@n_diff) when @diff is not NULL.
 * Free with image_config_free (and free(*@diff)). */
int oci_parse_config(const char *text, size_t len, struct image_config *c,
                     char (**diff)[OCI_DIGEST_LEN + 1], size_t *n_diff, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void image_config_free(struct image_config *c);

/* oci_parse_docker_manifest() - a docker-archive's manifest.json: exactly
 * one image, its Config and Layers paths (relative, not climbing out).
 * Free with docker_manifest_free. */
int oci_parse_docker_manifest(const char *text, size_t len, struct docker_manifest *d, char *err,
                              size_t errlen) __attribute__((warn_unused_result));
void docker_manifest_free(struct docker_manifest *d);

/* oci_member_name() - an archive member's name with leading "./" (and
 * "/" after them) dropped, pointing into @name; NULL for an absolute
 * name or one with a ".." component. */
const char *oci_member_name(const char *name);

#endif
