/* The root file system of a template built from a container image
 * (template_rootfs.c): the image read into the store's image cache, its
 * layers applied into a new ext4 file without root (lib/image/), and
 * cove-agent put in as /.cove/cove-agent, booted with ROOTFS_INIT. */
#ifndef COVE_TEMPLATE_ROOTFS_H
#define COVE_TEMPLATE_ROOTFS_H

#include <stddef.h>

#include "lib/base/cove_types.h"
#include "lib/template/template_manifest.h"

#define ROOTFS_INIT      "init=/.cove/cove-agent"
#define ROOTFS_AGENT     "/.cove/cove-agent"
#define ROOTFS_AGENT_REL ".cove/cove-agent" /* as lib/image/ext4w.h names paths */
#define ROOTFS_HEADROOM  (256ull << 20)     /* free space at least, without --disk-size */
#define ROOTFS_CACHE_DIR ".images"          /* in the template store */

/* Makes sure the root file system of s->from with s->agent exists in
 * <store>/.images/rootfs/, keyed by the image's manifest digest, the
 * agent's content hash and s->disk_size: the first build unpacks it,
 * later ones (and other templates of the same image) find it.  Its path
 * goes into path, the image's config into c (env, workdir, user,
 * entrypoint, cmd, digest).  A hostile or oversized layer fails with one
 * line naming the entry and leaves nothing behind.
 * Return: 0 or -errno with a message. */
int template_rootfs(const char *store, const struct cove_template_spec *s,
                    const struct cove_template_io *io, char *path, size_t len,
                    struct cove_template_config *c, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
