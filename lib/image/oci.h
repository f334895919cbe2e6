/* Image sources (oci.c): a container image named by a reference is read
 * into a content-addressed cache and resolved to its config and layers,
 * every digest and size checked.  References:
 *   oci:DIR[:TAG]             an OCI image layout directory
 *   oci-archive:FILE[:TAG]    a tar (optionally compressed) of one
 *   docker-archive:FILE       what `docker save` writes (one image)
 *   anything else             a registry reference (docker.io/library/x:tag,
 *                             x:tag), pulled with skopeo into the cache
 * The layers are not applied here (lib/image/layer.h does that). */
#ifndef COVE_IMAGE_OCI_H
#define COVE_IMAGE_OCI_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/image/oci_json.h"

#define IMAGE_TAG_MAX         128              /* bytes of a :TAG ([A-Za-z0-9_][A-Za-z0-9._-]*) */
#define IMAGE_PULL_TIMEOUT_MS (30 * 60 * 1000) /* a registry pull, by default */

enum image_ref_kind {
	IMAGE_REF_OCI,
	IMAGE_REF_OCI_ARCHIVE,
	IMAGE_REF_DOCKER_ARCHIVE,
	IMAGE_REF_REGISTRY,
};

/* A parsed reference.  path: the directory or file, or for a registry the
 * reference itself (a "docker://" prefix dropped); tag: "" when none. */
struct image_ref {
	enum image_ref_kind kind;
	char path[PATH_MAX];
	char tag[IMAGE_TAG_MAX + 1];
};

/* One layer, in order from the bottom. */
struct image_layer {
	char digest[OCI_DIGEST_LEN + 1];
	char *path; /* the blob in the cache (read-only) */
	enum oci_comp comp;
	uint64_t size;
};

/* An image resolved: the manifest digest is its identity (the same digest
 * is the same image; for a docker-archive it is the digest of the OCI
 * manifest made for it).  Freed by image_src_free. */
struct image_src {
	char manifest_digest[OCI_DIGEST_LEN + 1];
	char config_digest[OCI_DIGEST_LEN + 1];
	struct image_layer *layers;
	size_t n_layers;
	struct image_config config;
	unsigned int blobs_read; /* blobs this call read into the cache (0: all cached) */
};

/* image_ref_parse() - @s into @r.  An empty path, a bad tag, or a
 * registry reference with characters outside [A-Za-z0-9._/:@-] (or not
 * starting with a letter or digit) is -EINVAL with a message. */
int image_ref_parse(const char *s, struct image_ref *r, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* image_src_open() - reads the image @ref into the cache directory
 * @cache (made where missing; e.g. ~/.cache/cove/images) and resolves it
 * for linux/amd64.  A registry pull runs skopeo for at most @timeout_ms
 * (<= 0: IMAGE_PULL_TIMEOUT_MS) into @cache/tmp, removed afterwards.  Safe
 * to run beside another call on the same cache.  Return: 0, or -errno
 * with a one-line message (a malformed or hostile image, a missing or
 * mismatching blob, no skopeo, ...) and nothing to free. */
int image_src_open(const char *cache, const char *ref, int timeout_ms, struct image_src *out,
                   char *err, size_t errlen) __attribute__((warn_unused_result));

void image_src_free(struct image_src *s);

#endif
