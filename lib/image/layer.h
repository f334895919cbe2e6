/* Container image layers (tar, pax or GNU tar; plain, gzip or zstd)
 * applied in order into an ext4w image, as the OCI image spec says:
 *
 * - A name loses a leading "./" (and "." components, repeated '/'); an
 *   absolute name, a ".." component, an empty name or one of PATH_MAX
 *   bytes or more is refused.
 * - ".wh.NAME" removes NAME (and what is below it) of the layers before
 *   (what this layer wrote there, before or after, stays);
 *   ".wh..wh..opq" empties its directory of what the layers before put
 *   there; what this layer itself wrote stays, before or after the marker
 *   in the tar.  Other ".wh..wh.*" names (aufs' own) are skipped.
 * - An entry whose parent path crosses a symbolic link is refused
 *   ("symlink-then-write"); so is a hard link whose target is absolute,
 *   climbs, is a directory or does not exist in the image.
 * - A missing parent directory is made (0755, root).  An existing entry is
 *   replaced, except that a directory over a directory merges (its
 *   attributes are the new ones).
 * - Owners, modes (setuid, setgid, sticky), mtimes, xattrs, device nodes,
 *   fifos, hard links and symbolic links are kept as the tar has them.
 *
 * A refusal is one line naming the layer and the entry, e.g. "layer 2:
 * entry '../x': climbs out of the root"; the layer stops there and the
 * image must be thrown away.  Nothing is ever written outside the image. */
#ifndef COVE_IMAGE_LAYER_H
#define COVE_IMAGE_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "lib/image/ext4w.h"
#include "lib/image/ext4w_tree.h"

/* Most entries (tar headers: files, directories, links, whiteouts) in all
 * the layers of one image, unless the caller sets another. */
#define LAYER_MAX_ENTRIES 262144

/* Most xattrs one entry may carry. */
#define LAYER_MAX_XATTRS 64

/* Limits and counts carried from one layer of an image to the next:
 * zero it before the first layer and pass the same one for each. */
struct layer_opts {
	uint64_t max_entries; /* 0: LAYER_MAX_ENTRIES */
	uint64_t entries;     /* entries seen so far, all layers */
};

/* layer_apply_file() - applies the layer in the file at path to w.
 * @index: the layer's number in messages ("layer 2: ...")
 * @o: the image's limits and counts (NULL: a layer alone, default limit)
 *
 * Return: 0, or -errno with one line in err: a refused entry (-EINVAL,
 * -ELOOP, -ENOENT, -EFBIG, -E2BIG, ...), a full disk (-ENOSPC), a
 * damaged archive (-EIO). */
int layer_apply_file(struct ext4w *w, unsigned int index, const char *path, struct layer_opts *o,
                     char *err, size_t errlen) __attribute__((warn_unused_result));

/* layer_apply_mem() - the same for a layer held in memory. */
int layer_apply_mem(struct ext4w *w, unsigned int index, const void *data, size_t len,
                    struct layer_opts *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* What layers need, for sizing an image before applying them: summed over
 * the layers, whiteouts ignored (an upper bound). */
struct layer_size {
	uint64_t entries; /* inodes at most */
	uint64_t blocks;  /* 4 KiB blocks: file data (holes of sparse entries
	                   * left out), directories, long symlinks, xattrs */
};

/* layer_measure_file() - adds the layer at path to *s, reading it once
 * (o: the entry limit, as for applying; NULL for the default).
 *
 * Return: 0, or -errno with one line in err. */
int layer_measure_file(const char *path, unsigned int index, const struct layer_opts *o,
                       struct layer_size *s, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* layer_measure_mem() - the same for a layer held in memory. */
int layer_measure_mem(const void *data, size_t len, unsigned int index, const struct layer_opts *o,
                      struct layer_size *s, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* layer_image_size() - an image size and inode count for ext4w_mkfs()
 * that holds what s counts plus headroom bytes (free space left for the
 * guest): ext4's own overhead (inode tables, bitmaps, group descriptors,
 * journal) included, rounded up to 1 MiB.  Inodes: the entries plus a
 * quarter, at least 1024 more. */
void layer_image_size(const struct layer_size *s, uint64_t headroom, uint64_t *bytes,
                      uint64_t *inodes);

#endif
