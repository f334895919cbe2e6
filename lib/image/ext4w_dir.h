/* Directories in ext4w without a scan per name: libext2fs looks names up
 * and links new ones by reading every block of a directory, so a layer
 * that fills a directory of n names would read n^2/2 entries.  Here a
 * directory is read once into an index of its names kept in memory, and
 * a new name goes into its last block (or a new one).  Linear directories
 * only (not htree, not inline data): those go to libext2fs as before. */
#ifndef COVE_IMAGE_EXT4W_DIR_H
#define COVE_IMAGE_EXT4W_DIR_H

#include <ext2fs/ext2fs.h>
#include <stddef.h>
#include <stdint.h>

/* Most names indexed; past it the index empties and scans come back. */
#define EXT4W_DIRINDEX_MAX (1u << 20)

struct dirname;

/* The names of the directories read so far: (directory, name) -> (inode,
 * EXT2_FT_* type), and the set of directories read whole. */
struct dirindex {
	struct dirname **slot;
	size_t cap, n;
	uint32_t *dirs; /* open addressing; 0: free */
	size_t dcap, dn;
	uint64_t seed;
};

/* dirindex_find() - name[0..len) in dir.
 * Return: 1 with *ino and *ft, 0 when dir has no such name, -1 when dir
 * was not read whole (scan it). */
int dirindex_find(const struct dirindex *x, uint32_t dir, const char *name, size_t len,
                  uint32_t *ino, int *ft);

/* dirindex_load() - reads directory dir of fs whole into the index. */
errcode_t dirindex_load(struct dirindex *x, ext2_filsys fs, uint32_t dir);

/* A name linked into or unlinked from dir (ignored unless dir is
 * indexed). */
void dirindex_add(struct dirindex *x, uint32_t dir, const char *name, uint32_t ino, int ft);
void dirindex_del(struct dirindex *x, uint32_t dir, const char *name);

/* Forgets everything (directories freed: their numbers come back). */
void dirindex_reset(struct dirindex *x);

/* ext4w_dir_append() - links name -> ino (EXT2_FT_* ft) into directory
 * dir: in its last block when there is room, else in a new block.  An
 * htree or inline-data directory goes through ext2fs_link. */
errcode_t ext4w_dir_append(ext2_filsys fs, ext2_ino_t dir, const char *name, ext2_ino_t ino,
                           int ft);

#endif
