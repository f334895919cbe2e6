/* Root file systems from container images (template_rootfs.h,
 * docs/images.md).  The ext4 file is made under a temporary name in the
 * cache and renamed into place whole, so a failed or killed build leaves
 * no image another build could take for finished. */
#include "lib/template/template_rootfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "io.h"
#include "lib/base/sha256.h"
#include "lib/image/ext4w.h"
#include "lib/image/ext4w_mkfs.h"
#include "lib/image/ext4w_tree.h"
#include "lib/image/layer.h"
#include "lib/image/oci.h"

#define AGENT_MAX (64u << 20)

static char **strv_dup(char *const *v, size_t n)
{
	char **o = calloc(n + 1, sizeof(*o));
	for (size_t i = 0; o && i < n; i++)
		if (!(o[i] = strdup(v[i]))) {
			for (size_t j = 0; j < i; j++)
				free(o[j]);
			free(o);
			return NULL;
		}
	return o;
}

static int config_from(const struct image_src *src, struct cove_template_config *c, char *err,
                       size_t errlen)
{
	const struct image_config *ic = &src->config;
	memset(c, 0, sizeof(*c));
	snprintf(c->image_digest, sizeof(c->image_digest), "%s", src->manifest_digest);
	c->env = strv_dup(ic->env, ic->n_env);
	c->nenv = c->env ? ic->n_env : 0;
	bool ok = c->env != NULL;
	if (ic->workdir && ic->workdir[0])
		ok = ok && (c->workdir = strdup(ic->workdir)) != NULL;
	if (ic->user && ic->user[0])
		ok = ok && (c->user = strdup(ic->user)) != NULL;
	if (ic->n_entrypoint)
		ok = ok && (c->entrypoint = strv_dup(ic->entrypoint, ic->n_entrypoint)) != NULL;
	if (ic->n_cmd)
		ok = ok && (c->cmd = strv_dup(ic->cmd, ic->n_cmd)) != NULL;
	if (!ok) {
		cove_template_config_free(c);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- the agent, put in ---- */

struct file_src {
	int fd;
	uint64_t off, size;
	unsigned char buf[1 << 16];
};

static int file_read(void *ctx, const void **data, size_t *len, uint64_t *off, char *err,
                     size_t errlen)
{
	struct file_src *f = ctx;
	if (f->off >= f->size)
		return 0;
	size_t want =
	    f->size - f->off < sizeof(f->buf) ? (size_t)(f->size - f->off) : sizeof(f->buf);
	ssize_t n = pread(f->fd, f->buf, want, (off_t)f->off);
	if (n <= 0)
		return errf(err, errlen, n < 0 ? -errno : -EIO, "cove-agent: %s",
		            n < 0 ? strerror(errno) : "shorter than it was");
	*data = f->buf;
	*len = (size_t)n;
	*off = f->off;
	f->off += (uint64_t)n;
	return 1;
}

static int put_agent(struct ext4w *w, const char *agent, char *err, size_t errlen)
{
	struct ext4w_stat st;
	char e[256];
	/* The image's own /.cove (if it has one) is not ours to keep. */
	if (ext4w_lookup(w, ".cove", &st, e, sizeof(e)) == 0 &&
	    ext4w_remove(w, ".cove", err, errlen) < 0)
		return -EIO;
	const struct ext4w_attr dir = { .mode = S_IFDIR | 0755, .mtime = (int64_t)time(NULL) };
	int r = ext4w_mkdir(w, ".cove", &dir, err, errlen);
	if (r < 0)
		return r;
	struct file_src *f = calloc(1, sizeof(*f));
	if (!f)
		return errf(err, errlen, -ENOMEM, "out of memory");
	struct stat fs;
	f->fd = open(agent, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &fs) < 0 || !S_ISREG(fs.st_mode) ||
	    (uint64_t)fs.st_size > AGENT_MAX) {
		r = errf(err, errlen, f->fd < 0 ? -errno : -EINVAL,
		         "cove-agent '%s': not a readable file under %u MiB", agent,
		         AGENT_MAX >> 20);
	} else {
		f->size = (uint64_t)fs.st_size;
		const struct ext4w_attr a = { .mode = S_IFREG | 0755, .mtime = dir.mtime };
		r = ext4w_write(w, ROOTFS_AGENT_REL, &a, f->size, file_read, f, err, errlen);
	}
	if (f->fd >= 0)
		close(f->fd);
	free(f);
	return r;
}

/* ---- the image ---- */

static int apply_layers(const char *tmp, const struct image_src *src,
                        const struct cove_template_spec *s, const struct cove_template_io *io,
                        char *err, size_t errlen)
{
	struct layer_size need = { 0 };
	struct layer_opts o = { 0 };
	int r = 0;
	for (size_t i = 0; r == 0 && i < src->n_layers; i++)
		r = layer_measure_file(src->layers[i].path, (unsigned)i + 1, &o, &need, err,
		                       errlen);
	if (r < 0)
		return r;
	uint64_t bytes, inodes, head = ROOTFS_HEADROOM;
	layer_image_size(&need, head, &bytes, &inodes);
	if (s->disk_size) {
		/* The disk is the size asked for; an image that does not fit
		 * it is refused before anything is written. */
		uint64_t min = bytes;
		layer_image_size(&need, 0, &min, &inodes);
		if (min > s->disk_size)
			return errf(err, errlen, -EFBIG,
			            "the image needs %llu MiB, more than --disk-size (%llu MiB)",
			            (unsigned long long)(min >> 20),
			            (unsigned long long)(s->disk_size >> 20));
		bytes = s->disk_size;
	}
	template_note(io, "image: %zu layers, %llu entries, %llu MiB of data: a %llu MiB ext4",
	              src->n_layers, (unsigned long long)need.entries,
	              (unsigned long long)(need.blocks >> 8), (unsigned long long)(bytes >> 20));
	if ((r = ext4w_mkfs(tmp, bytes, inodes, "cove-root", err, errlen)) < 0)
		return r;
	struct ext4w *w;
	if ((r = ext4w_open(tmp, &w, err, errlen)) < 0)
		return r;
	memset(&o, 0, sizeof(o));
	for (size_t i = 0; r == 0 && i < src->n_layers; i++)
		r = layer_apply_file(w, (unsigned)i + 1, src->layers[i].path, &o, err, errlen);
	if (r == 0)
		r = put_agent(w, s->agent, err, errlen);
	char e[256];
	int c = ext4w_close(w, e, sizeof(e));
	if (r == 0 && c < 0)
		r = errf(err, errlen, c, "%s", e);
	return r;
}

int template_rootfs(const char *store, const struct cove_template_spec *s,
                    const struct cove_template_io *io, char *path, size_t len,
                    struct cove_template_config *c, char *err, size_t errlen)
{
	char cache[PATH_MAX], dir[PATH_MAX + 16];
	snprintf(cache, sizeof(cache), "%s/%s", store, ROOTFS_CACHE_DIR);
	snprintf(dir, sizeof(dir), "%s/rootfs", cache);
	if (!s->from || !s->agent)
		return errf(err, errlen, -EINVAL, "no image or no cove-agent to put in it");
	struct image_src src;
	int64_t t0 = mono_ms();
	int r = image_src_open(cache, s->from, 0, &src, err, errlen);
	if (r < 0)
		return r;
	template_note(io, "image %s: %s, %zu layers (%u blobs read into the cache)", s->from,
	              src.manifest_digest, src.n_layers, src.blobs_read);
	if ((r = config_from(&src, c, err, errlen)) < 0)
		goto out;
	/* The key: what the file holds (the image, the agent, its size). */
	char agent[SHA256_HEX], key[SHA256_HEX];
	int afd = open(s->agent, O_RDONLY | O_CLOEXEC);
	r = afd < 0 ? -errno : template_file_hash(afd, agent);
	if (afd >= 0)
		close(afd);
	if (r < 0) {
		r = errf(err, errlen, r, "cove-agent '%s': %s", s->agent, strerror(-r));
		goto out;
	}
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	char text[256];
	int n = snprintf(text, sizeof(text), "rootfs 1\n%s\n%s\n%llu\n", src.manifest_digest, agent,
	                 (unsigned long long)s->disk_size);
	sha256_init(&h);
	sha256_update(&h, text, (size_t)n);
	sha256_final(&h, d);
	sha256_hex(d, key);
	if ((size_t)snprintf(path, len, "%s/%.32s.ext4", dir, key) >= len) {
		r = errf(err, errlen, -ENAMETOOLONG, "the image cache's path is too long");
		goto out;
	}
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		template_note(io, "image: root file system cached (%s)", path);
		goto out;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = errf(err, errlen, -errno, "%s: %s", dir, strerror(errno));
		goto out;
	}
	char tmp[PATH_MAX + 64];
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)t0;
	snprintf(tmp, sizeof(tmp), "%s/.tmp.%d.%08x", dir, (int)getpid(), rnd);
	r = apply_layers(tmp, &src, s, io, err, errlen);
	if (r == 0 && (chmod(tmp, 0444) < 0 || rename(tmp, path) < 0))
		r = errf(err, errlen, -errno, "%s: %s", path, strerror(errno));
	if (r < 0)
		unlink(tmp);
	else
		template_note(io, "image: unpacked into %s in %lld ms", path,
		              (long long)(mono_ms() - t0));
out:
	if (r < 0)
		cove_template_config_free(c);
	image_src_free(&src);
	return r;
}
