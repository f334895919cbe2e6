/* Image archives read with libarchive (oci_archive.c): an oci-archive (a
 * tar of an OCI layout) and a docker-archive (`docker save`: manifest.json,
 * a config, layer tars).  Only members that are blobs the image needs are
 * read, each straight into the cache by its digest, never by the member's
 * own name: a member called "../x" or "/etc/x" is never written anywhere.
 * A blob already cached is skipped unread. */
#ifndef COVE_IMAGE_OCI_ARCHIVE_H
#define COVE_IMAGE_OCI_ARCHIVE_H

#include <stddef.h>

#include "lib/image/oci_cache.h"
#include "lib/image/oci_json.h"

#define OCI_ARCHIVE_MEMBERS_MAX (1 << 20) /* members of one archive */

/* oci_archive_oci() - the oci-archive @path: each member named
 * blobs/sha256/<hex> that is not cached goes into @c (its content must
 * hash to its name), and index.json comes back in *@index (malloc'ed,
 * NUL-ended, *@len bytes).  Sizes are checked later, against the
 * descriptors.  Return: 0 or -errno with a message. */
int oci_archive_oci(struct oci_cache *c, const char *path, char **index, size_t *len, char *err,
                    size_t errlen) __attribute__((warn_unused_result));

/* oci_archive_docker() - the docker-archive @path: its config and layers
 * into @c (a layer's digest must be the config's diff_id for it: layers
 * are uncompressed tars, as `docker save` writes them), then an OCI
 * manifest of them, which goes into the cache too; its digest, the
 * image's identity, in @manifest.  Return: 0 or -errno with a message. */
int oci_archive_docker(struct oci_cache *c, const char *path, char manifest[OCI_DIGEST_LEN + 1],
                       char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
