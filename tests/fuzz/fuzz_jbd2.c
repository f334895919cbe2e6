/* libFuzzer target: hostile ext4 journals (lib/image/jbd2.c).  The input
 * is the journal itself, in 1 KiB blocks (block 0 its superblock); the
 * replay scan must fail cleanly or give copies inside the file system and
 * the journal, never crash, hang or leak. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/image/jbd2.h"

#define BS        1024
#define FS_BLOCKS (1u << 16)

struct input {
	const uint8_t *data;
	size_t size;
};

static int read_block(void *arg, uint32_t jblock, uint8_t *buf)
{
	const struct input *in = arg;
	if ((uint64_t)jblock * BS + BS > in->size)
		return -EIO;
	memcpy(buf, in->data + (size_t)jblock * BS, BS);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { .data = data, .size = size };
	uint32_t blocks = (uint32_t)(size / BS);
	struct jbd2_replay r;
	char err[256];
	if (jbd2_replay_scan(BS, blocks, FS_BLOCKS, read_block, &in, &r, err, sizeof(err)))
		return 0;
	for (size_t i = 0; i < r.n; i++) {
		if (r.copy[i].block >= FS_BLOCKS || r.copy[i].jblock >= blocks ||
		    (i && r.copy[i - 1].block >= r.copy[i].block))
			abort();
		if (jbd2_replay_find(&r, r.copy[i].block) != &r.copy[i])
			abort();
	}
	jbd2_replay_free(&r);
	return 0;
}
