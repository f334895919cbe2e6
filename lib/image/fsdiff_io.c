/* The io_manager over a qcow2 chain (fsdiff_io.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/image/fsdiff_io.h"

#define VIEW_PREFIX "cove-view:"

void fsdiff_view_name(const struct fsdiff_view *v, char *buf, size_t len)
{
	snprintf(buf, len, VIEW_PREFIX "%p", (const void *)v);
}

/* Lays the journal's copies over [off, off + len) of buf. */
static int overlay_copies(struct fsdiff_view *v, uint8_t *buf, size_t len, uint64_t off)
{
	uint64_t bs = v->block_size;
	uint8_t *jb = NULL;
	int r = 0;
	for (uint64_t b = off / bs; b * bs < off + len; b++) {
		const struct jbd2_copy *c = jbd2_replay_find(v->replay, b);
		if (!c)
			continue;
		if (c->jblock >= v->jblocks) {
			r = -EIO;
			snprintf(v->err, sizeof(v->err), "journal block %u outside the journal",
			         c->jblock);
			break;
		}
		if (!jb && !(jb = malloc(bs))) {
			r = -ENOMEM;
			break;
		}
		r = qcow2_chain_read(v->chain, v->from, jb, bs, v->jmap[c->jblock] * bs, v->err,
		                     sizeof(v->err));
		if (r)
			break;
		if (c->escaped) {
			uint32_t magic = JBD2_MAGIC;
			for (int i = 0; i < 4; i++)
				jb[i] = (uint8_t)(magic >> (24 - 8 * i));
		}
		uint64_t from = b * bs > off ? b * bs : off;
		uint64_t to = (b + 1) * bs < off + len ? (b + 1) * bs : off + len;
		memcpy(buf + (from - off), jb + (from - b * bs), to - from);
	}
	free(jb);
	return r;
}

int fsdiff_view_read(struct fsdiff_view *v, void *buf, size_t len, uint64_t off)
{
	int r = qcow2_chain_read(v->chain, v->from, buf, len, off, v->err, sizeof(v->err));
	if (!r && v->replay && v->replay->n && v->block_size)
		r = overlay_copies(v, buf, len, off);
	return r;
}

static errcode_t view_open(const char *name, int flags, io_channel *out)
{
	void *p = NULL;
	if (!name || strncmp(name, VIEW_PREFIX, strlen(VIEW_PREFIX)) ||
	    sscanf(name + strlen(VIEW_PREFIX), "%p", &p) != 1 || !p)
		return EXT2_ET_BAD_DEVICE_NAME;
	if (flags & IO_FLAG_RW)
		return EXT2_ET_RO_FILSYS;
	io_channel c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strdup(name))) {
		free(c);
		return EXT2_ET_NO_MEMORY;
	}
	c->magic = EXT2_ET_MAGIC_IO_CHANNEL;
	c->manager = fsdiff_io_manager();
	c->block_size = 1024;
	c->refcount = 1;
	c->private_data = p;
	*out = c;
	return 0;
}

static errcode_t view_close(io_channel c)
{
	if (--c->refcount > 0)
		return 0;
	free(c->name);
	free(c);
	return 0;
}

static errcode_t view_set_blksize(io_channel c, int blksize)
{
	if (blksize <= 0)
		return EXT2_ET_INVALID_ARGUMENT;
	c->block_size = blksize;
	return 0;
}

static errcode_t view_read64(io_channel c, unsigned long long block, int count, void *data)
{
	size_t len =
	    count < 0 ? (size_t) - (long long)count : (size_t)count * (size_t)c->block_size;
	uint64_t off = (uint64_t)block * (uint64_t)c->block_size;
	if (block > UINT64_MAX / (uint64_t)c->block_size)
		return EXT2_ET_LLSEEK_FAILED;
	int r = fsdiff_view_read(c->private_data, data, len, off);
	if (r == -ENOMEM)
		return EXT2_ET_NO_MEMORY;
	return r ? EXT2_ET_SHORT_READ : 0;
}

static errcode_t view_read(io_channel c, unsigned long block, int count, void *data)
{
	return view_read64(c, block, count, data);
}

static errcode_t view_write(io_channel c, unsigned long block, int count, const void *data)
{
	(void)c, (void)block, (void)count, (void)data;
	return EXT2_ET_RO_FILSYS;
}

static errcode_t view_write64(io_channel c, unsigned long long block, int count, const void *data)
{
	(void)c, (void)block, (void)count, (void)data;
	return EXT2_ET_RO_FILSYS;
}

static errcode_t view_write_byte(io_channel c, unsigned long off, int count, const void *data)
{
	(void)c, (void)off, (void)count, (void)data;
	return EXT2_ET_RO_FILSYS;
}

static errcode_t view_flush(io_channel c)
{
	(void)c;
	return 0;
}

static errcode_t view_set_option(io_channel c, const char *option, const char *arg)
{
	(void)c, (void)option, (void)arg;
	return EXT2_ET_INVALID_ARGUMENT;
}

static struct struct_io_manager g_view_manager = {
	.magic = EXT2_ET_MAGIC_IO_MANAGER,
	.name = "cove qcow2 view",
	.open = view_open,
	.close = view_close,
	.set_blksize = view_set_blksize,
	.read_blk = view_read,
	.write_blk = view_write,
	.flush = view_flush,
	.write_byte = view_write_byte,
	.set_option = view_set_option,
	.read_blk64 = view_read64,
	.write_blk64 = view_write64,
};

io_manager fsdiff_io_manager(void)
{
	return &g_view_manager;
}
