/* libFuzzer target: hostile layers (lib/image/layer.c over ext4w).  The
 * input is a layer (tar, maybe gzip or zstd).  It is measured, then
 * applied to a small ext4 image, 4 MiB and 256 inodes, kept in a memfd:
 * a pristine copy made once by mkfs.ext4 is written back before each
 * input.  Refusals and full disks are fine; crashes, hangs and leaks are
 * not, and neither is an image whose own checks then fail: a second
 * layer (a whiteout of everything the first made, by an opaque root)
 * must apply to whatever the first left, unless the first failed the
 * image. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/image/ext4w.h"
#include "lib/image/ext4w_mkfs.h"
#include "lib/image/ext4w_tree.h"
#include "lib/image/layer.h"

#define IMAGE_BYTES  (4u << 20)
#define IMAGE_INODES 256

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned char *g_pristine;
static int g_fd = -1;
static char g_path[64];

/* An empty tar but for "./.wh..wh..opq": empties the root. */
static unsigned char g_opaque[1536];

static void make_opaque(void)
{
	char *h = (char *)g_opaque;
	unsigned int sum = 0;
	snprintf(h, 100, "./.wh..wh..opq");
	snprintf(h + 100, 8, "0000644");
	snprintf(h + 108, 8, "0000000");
	snprintf(h + 116, 8, "0000000");
	snprintf(h + 124, 12, "00000000000");
	snprintf(h + 136, 12, "14523102000");
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[] = "/tmp/fuzz-layer-XXXXXX", img[64], err[512];
	(void)argc, (void)argv;
	if (!mkdtemp(dir))
		abort();
	snprintf(img, sizeof(img), "%s/img", dir);
	if (ext4w_mkfs(img, IMAGE_BYTES, IMAGE_INODES, "fuzz", err, sizeof(err))) {
		fprintf(stderr, "fuzz_layer: %s\n", err);
		abort();
	}
	FILE *f = fopen(img, "rb");
	g_pristine = malloc(IMAGE_BYTES);
	if (!f || !g_pristine || fread(g_pristine, 1, IMAGE_BYTES, f) != IMAGE_BYTES)
		abort();
	fclose(f);
	unlink(img);
	rmdir(dir);
	g_fd = memfd_create("fuzz-layer", MFD_CLOEXEC);
	if (g_fd < 0)
		abort();
	snprintf(g_path, sizeof(g_path), "/proc/self/fd/%d", g_fd);
	make_opaque();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024];
	struct ext4w *w;
	struct layer_size s = { 0 };
	struct layer_opts o = { .max_entries = 512 };

	(void)layer_measure_mem(data, size, 1, &o, &s, err, sizeof(err));
	if (pwrite(g_fd, g_pristine, IMAGE_BYTES, 0) != (ssize_t)IMAGE_BYTES)
		abort();
	if (ext4w_open(g_path, &w, err, sizeof(err)))
		abort(); /* the pristine image must open */
	int rc = layer_apply_mem(w, 1, data, size, &o, err, sizeof(err));
	if (rc && (!err[0] || strchr(err, '\n')))
		abort(); /* a refusal is one line */
	struct layer_opts o2 = { 0 };
	if (!ext4w_failed(w) &&
	    layer_apply_mem(w, 2, g_opaque, sizeof(g_opaque), &o2, err, sizeof(err)) &&
	    !ext4w_failed(w)) {
		fprintf(stderr, "fuzz_layer: emptying the root: %s\n", err);
		abort();
	}
	(void)ext4w_close(w, err, sizeof(err));
	return 0;
}
