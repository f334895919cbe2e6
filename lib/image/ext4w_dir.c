/* Directories in ext4w without a scan per name; see ext4w_dir.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lib/image/ext4w_dir.h"

struct dirname {
	uint32_t dir, ino;
	int ft;
	uint8_t len;
	char name[];
};

/* Seeded FNV-1a, mixed (names come from layers). */
static uint64_t hash(uint64_t seed, uint32_t dir, const char *name, size_t len)
{
	uint64_t h = (0xcbf29ce484222325ULL ^ seed) + dir * 0x9e3779b97f4a7c15ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static size_t probe(const struct dirindex *x, uint32_t dir, const char *name, size_t len)
{
	size_t i = (size_t)hash(x->seed, dir, name, len) & (x->cap - 1);
	for (struct dirname *d; (d = x->slot[i]); i = (i + 1) & (x->cap - 1))
		if (d->dir == dir && d->len == len && !memcmp(d->name, name, len))
			break;
	return i;
}

static size_t dprobe(const struct dirindex *x, uint32_t dir)
{
	size_t i = (size_t)hash(x->seed, dir, "", 0) & (x->dcap - 1);
	while (x->dirs[i] && x->dirs[i] != dir)
		i = (i + 1) & (x->dcap - 1);
	return i;
}

static int indexed(const struct dirindex *x, uint32_t dir)
{
	return x->dcap && x->dirs[dprobe(x, dir)] == dir;
}

void dirindex_reset(struct dirindex *x)
{
	for (size_t i = 0; i < x->cap; i++)
		free(x->slot[i]);
	free(x->slot);
	free(x->dirs);
	uint64_t seed = x->seed;
	*x = (struct dirindex){ .seed = seed };
}

int dirindex_find(const struct dirindex *x, uint32_t dir, const char *name, size_t len,
                  uint32_t *ino, int *ft)
{
	if (!indexed(x, dir))
		return -1;
	struct dirname *d = x->slot[probe(x, dir, name, len)];
	if (!d)
		return 0;
	*ino = d->ino;
	*ft = d->ft;
	return 1;
}

/* Both tables at most half full; 0 or -ENOMEM. */
static int grow(struct dirindex *x)
{
	if (!x->seed && getrandom(&x->seed, sizeof(x->seed), GRND_NONBLOCK) != sizeof(x->seed))
		x->seed = (uint64_t)time(NULL) | 1;
	if ((x->n + 1) * 2 > x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 1024;
		struct dirname **slot = calloc(cap, sizeof(*slot)), **old = x->slot;
		if (!slot)
			return -ENOMEM;
		size_t ocap = x->cap;
		x->slot = slot;
		x->cap = cap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i])
				slot[probe(x, old[i]->dir, old[i]->name, old[i]->len)] = old[i];
		free(old);
	}
	if ((x->dn + 1) * 2 > x->dcap) {
		size_t cap = x->dcap ? 2 * x->dcap : 256, ocap = x->dcap;
		uint32_t *dirs = calloc(cap, sizeof(*dirs)), *old = x->dirs;
		if (!dirs)
			return -ENOMEM;
		x->dirs = dirs;
		x->dcap = cap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i])
				dirs[dprobe(x, old[i])] = old[i];
		free(old);
	}
	return 0;
}

static int put(struct dirindex *x, uint32_t dir, const char *name, size_t len, uint32_t ino, int ft)
{
	if (x->n >= EXT4W_DIRINDEX_MAX || grow(x))
		return -ENOMEM;
	size_t i = probe(x, dir, name, len);
	if (x->slot[i])
		return 0; /* a name twice in a directory: the first one wins, as for a scan */
	struct dirname *d = malloc(sizeof(*d) + len);
	if (!d)
		return -ENOMEM;
	*d = (struct dirname){ .dir = dir, .ino = ino, .ft = ft, .len = (uint8_t)len };
	memcpy(d->name, name, len);
	x->slot[i] = d;
	x->n++;
	return 0;
}

void dirindex_add(struct dirindex *x, uint32_t dir, const char *name, uint32_t ino, int ft)
{
	if (indexed(x, dir) && put(x, dir, name, strlen(name), ino, ft))
		dirindex_reset(x);
}

void dirindex_del(struct dirindex *x, uint32_t dir, const char *name)
{
	if (!indexed(x, dir))
		return;
	size_t i = probe(x, dir, name, strlen(name));
	if (!x->slot[i])
		return;
	free(x->slot[i]);
	x->slot[i] = NULL;
	x->n--;
	/* put back the run after the hole (linear probing) */
	for (size_t j = (i + 1) & (x->cap - 1); x->slot[j]; j = (j + 1) & (x->cap - 1)) {
		struct dirname *d = x->slot[j];
		x->slot[j] = NULL;
		x->slot[probe(x, d->dir, d->name, d->len)] = d;
	}
}

struct load {
	struct dirindex *x;
	int rc;
};

static int load_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *de, int off, int bs, char *buf,
                   void *priv)
{
	struct load *l = priv;
	int len = ext2fs_dirent_name_len(de);
	(void)entry, (void)off, (void)bs, (void)buf;
	if ((len == 1 && de->name[0] == '.') || (len == 2 && !memcmp(de->name, "..", 2)))
		return 0;
	l->rc = put(l->x, dir, de->name, (size_t)len, de->inode, ext2fs_dirent_file_type(de));
	return l->rc ? DIRENT_ABORT : 0;
}

errcode_t dirindex_load(struct dirindex *x, ext2_filsys fs, uint32_t dir)
{
	struct load l = { .x = x };
	if (indexed(x, dir))
		return 0;
	errcode_t e = ext2fs_dir_iterate2(fs, dir, 0, NULL, load_cb, &l);
	if (e || l.rc || grow(x)) {
		dirindex_reset(x); /* no half-read directory stays */
		return e ? e : EXT2_ET_NO_MEMORY;
	}
	x->dirs[dprobe(x, dir)] = dir;
	x->dn++;
	return 0;
}

/* ---- appending ------------------------------------------------------------ */

/* Puts the entry into block buf if there is room: 1 if it went in. */
static int fit(ext2_filsys fs, char *buf, const char *name, ext2_ino_t ino, int ft)
{
	unsigned int bs = fs->blocksize, need = EXT2_DIR_REC_LEN(strlen(name));
	unsigned int end = bs - (ext2fs_dirent_has_tail(fs, (struct ext2_dir_entry *)buf)
	                             ? sizeof(struct ext2_dir_entry_tail)
	                             : 0);
	for (unsigned int off = 0; off < end;) {
		struct ext2_dir_entry *de = (struct ext2_dir_entry *)(buf + off);
		unsigned int rec = 0;
		if (ext2fs_get_rec_len(fs, de, &rec) || rec < 8 || rec % 4 || off + rec > end)
			return 0; /* not as expected: libext2fs decides */
		unsigned int used = de->inode ? EXT2_DIR_REC_LEN(ext2fs_dirent_name_len(de)) : 0;
		if (rec - used >= need) {
			struct ext2_dir_entry *n = (struct ext2_dir_entry *)(buf + off + used);
			if (used && ext2fs_set_rec_len(fs, used, de))
				return 0;
			if (ext2fs_set_rec_len(fs, rec - used, n))
				return 0;
			n->inode = ino;
			ext2fs_dirent_set_name_len(n, (int)strlen(name));
			ext2fs_dirent_set_file_type(n, ext2fs_has_feature_filetype(fs->super) ? ft
			                                                                      : 0);
			memcpy(n->name, name, strlen(name));
			return 1;
		}
		off += rec;
	}
	return 0;
}

errcode_t ext4w_dir_append(ext2_filsys fs, ext2_ino_t dir, const char *name, ext2_ino_t ino, int ft)
{
	struct ext2_inode in;
	blk64_t pblk = 0;
	char *buf = NULL;

	errcode_t e = ext2fs_read_inode(fs, dir, &in);
	if (e)
		return e;
	uint64_t size = EXT2_I_SIZE(&in);
	if ((in.i_flags & (EXT2_INDEX_FL | EXT4_INLINE_DATA_FL)) || size < fs->blocksize ||
	    size % fs->blocksize)
		return ext2fs_link(fs, dir, name, ino, ft);
	for (int tries = 0; tries < 2; tries++) {
		blk64_t last = size / fs->blocksize - 1;
		e = ext2fs_bmap2(fs, dir, &in, NULL, 0, last, NULL, &pblk);
		if (!e && !buf)
			e = ext2fs_get_mem(fs->blocksize, &buf);
		if (!e && pblk)
			e = ext2fs_read_dir_block4(fs, pblk, buf, 0, dir);
		if (e || !pblk)
			break;
		if (fit(fs, buf, name, ino, ft)) {
			e = ext2fs_write_dir_block4(fs, pblk, buf, 0, dir);
			ext2fs_free_mem(&buf);
			return e;
		}
		if (tries || (e = ext2fs_expand_dir(fs, dir)) ||
		    (e = ext2fs_read_inode(fs, dir, &in)))
			break;
		size = EXT2_I_SIZE(&in);
	}
	ext2fs_free_mem(&buf);
	return e ? e : ext2fs_link(fs, dir, name, ino, ft);
}
