/* layer_bench [TAR]: times a layer into ext4 (lib/image): the sizing
 * pass, mkfs.ext4, the apply and the close.  With no TAR it makes the
 * synthetic layer of docs/images.md ("Layers") first: 200 directories of 100
 * files (one of 250,000 bytes and 99 of about 2,500 each; 20,200 entries,
 * 100 MB), random bytes.  Needs no KVM; the image and the made layer go
 * in a temporary directory that is removed.  Prints one line. */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "lib/image/ext4w.h"
#include "lib/image/ext4w_mkfs.h"
#include "lib/image/layer.h"

static int make_layer(const char *tar)
{
	static char buf[1 << 20];
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	char p[128];
	srand(1);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(rand() | 1);
	if (!a || !e || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_filename(a, tar) != ARCHIVE_OK)
		return -1;
	for (int d = 0; d < 200; d++) {
		snprintf(p, sizeof(p), "usr/share/d%03d/", d);
		archive_entry_clear(e);
		archive_entry_set_pathname(e, p);
		archive_entry_set_filetype(e, AE_IFDIR);
		archive_entry_set_perm(e, 0755);
		if (archive_write_header(a, e) != ARCHIVE_OK)
			return -1;
		for (int f = 0; f < 100; f++) {
			size_t size = f == 0 ? 250000 : 2500 + (size_t)(rand() % 100);
			snprintf(p, sizeof(p), "usr/share/d%03d/file-with-a-longish-name-%03d.txt",
			         d, f);
			archive_entry_clear(e);
			archive_entry_set_pathname(e, p);
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_size(e, (la_int64_t)size);
			if (archive_write_header(a, e) != ARCHIVE_OK ||
			    archive_write_data(a, buf + rand() % 1000, size) != (la_ssize_t)size)
				return -1;
		}
	}
	archive_entry_free(e);
	int rc = archive_write_close(a) == ARCHIVE_OK ? 0 : -1;
	archive_write_free(a);
	return rc;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/layer-bench-XXXXXX", tar[64], img[64], err[1024];
	if (!mkdtemp(dir))
		return 1;
	snprintf(tar, sizeof(tar), "%s/layer.tar", dir);
	snprintf(img, sizeof(img), "%s/img", dir);
	const char *layer = argc > 1 ? argv[1] : tar;
	int rc = 1;
	if (argc < 2 && make_layer(tar)) {
		fprintf(stderr, "layer_bench: writing the layer failed\n");
		goto out;
	}
	struct layer_size s = { 0 };
	struct layer_opts o = { 0 };
	struct ext4w *w;
	uint64_t bytes, inodes;
	int64_t t0 = mono_ns();
	if (layer_measure_file(layer, 1, NULL, &s, err, sizeof(err)))
		goto fail;
	int64_t t1 = mono_ns();
	layer_image_size(&s, 64 << 20, &bytes, &inodes);
	if (ext4w_mkfs(img, bytes, inodes, "bench", err, sizeof(err)))
		goto fail;
	int64_t t2 = mono_ns();
	if (ext4w_open(img, &w, err, sizeof(err)))
		goto fail;
	int a = layer_apply_file(w, 1, layer, &o, err, sizeof(err));
	int c = ext4w_close(w, a ? NULL : err, a ? 0 : sizeof(err));
	if (a || c)
		goto fail;
	int64_t t3 = mono_ns();
	printf("%llu entries, %llu blocks, image %llu MiB: measure %.2f s, mkfs %.2f s, "
	       "apply and close %.2f s\n",
	       (unsigned long long)s.entries, (unsigned long long)s.blocks,
	       (unsigned long long)(bytes >> 20), (t1 - t0) / 1e9, (t2 - t1) / 1e9,
	       (t3 - t2) / 1e9);
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "layer_bench: %s\n", err);
out:
	unlink(tar);
	unlink(img);
	rmdir(dir);
	return rc;
}
