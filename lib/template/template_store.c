/* The template store (template_store.h, docs/templates.md): where templates live, their file hashes cached by stat,
 * the locks that make one builder of a name, listing and removing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "errf.h"
#include "io.h"
#include "lib/base/sha256.h"
#include "lib/image/context.h"
#include "lib/image/oci.h"
#include "lib/template/template_json.h"
#include "lib/template/template_manifest.h"
#include "lib/template/template_store.h"

#define LOCK_RM_WAIT_MS 60000

/* ---- the store ---- */

static int mkdir_own(const char *path, char *err, size_t errlen)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return errf(err, errlen, -errno, "cannot create '%s': %s", path, strerror(errno));
	struct stat st;
	if (lstat(path, &st) < 0)
		return errf(err, errlen, -errno, "'%s': %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return errf(err, errlen, -EPERM,
		            "template store '%s' must be a directory of uid %u that others cannot "
		            "write (it is uid %u, mode %04o): remove it, or set COVE_TEMPLATE_DIR",
		            path, (unsigned)geteuid(), (unsigned)st.st_uid,
		            (unsigned)(st.st_mode & 07777));
	return 0;
}

static _Atomic(const char *) store_override;

void cove_template_set_store(const char *dir)
{
	atomic_store(&store_override, dir);
}

int cove_template_store(char *out, size_t len, char *err, size_t errlen)
{
	const char *env = atomic_load(&store_override);
	if (!env)
		env = getenv("COVE_TEMPLATE_DIR");
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int n;
	if (env && *env)
		n = snprintf(out, len, "%s", env);
	else if (xdg && xdg[0] == '/')
		n = snprintf(out, len, "%s/cove/templates", xdg);
	else if (home && home[0] == '/')
		n = snprintf(out, len, "%s/.cache/cove/templates", home);
	else
		return errf(err, errlen, -ENOENT,
		            "no template store: set COVE_TEMPLATE_DIR (or HOME)");
	if (n < 0 || (size_t)n >= len || n > PATH_MAX - 128)
		return errf(err, errlen, -ENAMETOOLONG, "template store path is too long");
	if (!env || !*env) {
		/* The cache's parents, as mkdir -p would (only ours to make). */
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s", out);
		for (char *c = p + 1; (c = strchr(c, '/')); c++) {
			*c = 0;
			if (mkdir(p, 0700) < 0 && errno != EEXIST)
				return errf(err, errlen, -errno, "cannot create '%s': %s", p,
				            strerror(errno));
			*c = '/';
		}
	}
	int r = mkdir_own(out, err, errlen);
	char sub[PATH_MAX];
	if (r == 0) {
		snprintf(sub, sizeof(sub), "%s/.lock", out);
		r = mkdir_own(sub, err, errlen);
	}
	if (r == 0) {
		snprintf(sub, sizeof(sub), "%s/.hash", out);
		r = mkdir_own(sub, err, errlen);
	}
	return r;
}

/* ---- locks ---- */

/* NAME's locks in the store's .lock/: "NAME" is the use lock (shared by
 * each restore while it reads the template, exclusive for a rebuild or a
 * removal); ".build-NAME" (no template name starts with '.') is taken
 * exclusively by whoever checks whether NAME must be built, so that many
 * creates waiting for one build queue there, not behind each other's
 * restores. */
int template_lock_open(const char *store, const char *name, char *err, size_t errlen)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/.lock/%s", store, name);
	int fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errf(err, errlen, -errno, "cannot open lock '%s': %s", p, strerror(errno));
	return fd;
}

/* ---- file hashes, cached by what stat says ---- */

/* The hash cache's line at cpath, when its stat fields are want (wn
 * bytes): the hash into hex, true. */
static bool cache_read(const char *cpath, const char *want, int wn, char hex[SHA256_HEX])
{
	char line[256];
	int cfd = open(cpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (cfd < 0)
		return false;
	ssize_t n = read_full(cfd, line, sizeof(line) - 1);
	close(cfd);
	if (n != wn + SHA256_HEX || memcmp(line, want, (size_t)wn) || line[n - 1] != '\n')
		return false;
	memcpy(hex, line + wn, SHA256_HEX - 1);
	hex[SHA256_HEX - 1] = 0;
	return true;
}

/* The content hash of path; the cache entry (.hash/<sha of the path>)
 * holds the stat fields it was computed for, and is used only while they
 * all match. */
static int file_hash(const char *store, const char *path, const char *what, char hex[SHA256_HEX],
                     char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return errf(err, errlen, -e, "%s '%s': %s", what, path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return errf(err, errlen, -EINVAL, "%s '%s' is not a regular file", what, path);
	}
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	char key[SHA256_HEX], cpath[PATH_MAX], want[256];
	sha256_init(&h);
	sha256_update(&h, path, strlen(path));
	sha256_final(&h, d);
	sha256_hex(d, key);
	snprintf(cpath, sizeof(cpath), "%s/.hash/%.40s", store, key);
	int wn = snprintf(want, sizeof(want), "1 %llu %llu %lld %lld.%09ld %lld.%09ld ",
	                  (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
	                  (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
	                  (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	if (cache_read(cpath, want, wn, hex)) {
		close(fd);
		return 0;
	}
	/* One caller hashes a file at a time (many creates at once find the
	 * cache cold together); the others wait and then read its line.
	 * Best effort: without the lock each caller hashes for itself. */
	char lpath[PATH_MAX + 8];
	snprintf(lpath, sizeof(lpath), "%s.lock", cpath);
	int lfd = open(lpath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd >= 0 && flock_wait(lfd, LOCK_EX, LOCK_BUILD_WAIT_MS) < 0) {
		close(lfd);
		lfd = -1;
	}
	if (lfd >= 0 && cache_read(cpath, want, wn, hex)) {
		close(lfd);
		close(fd);
		return 0;
	}
	int r = template_file_hash(fd, hex);
	close(fd);
	if (r < 0) {
		if (lfd >= 0)
			close(lfd);
		return errf(err, errlen, r, "%s '%s': %s", what, path, strerror(-r));
	}
	/* Best effort: a cache that cannot be written costs a read next time.
	 * The temporary name is the thread's own (coved hashes on many). */
	char tmp[PATH_MAX + 48];
	snprintf(tmp, sizeof(tmp), "%s.%d.%d.tmp", cpath, (int)getpid(), (int)gettid());
	int cfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (cfd >= 0) {
		bool ok = write_all(cfd, want, (size_t)wn) == 0 &&
		          write_all(cfd, hex, SHA256_HEX - 1) == 0 && write_all(cfd, "\n", 1) == 0;
		close(cfd);
		if (!ok || rename(tmp, cpath) < 0)
			unlink(tmp);
	}
	if (lfd >= 0)
		close(lfd);
	return 0;
}

/* What a COPY step reads, hashed: a folder's matched entries (names,
 * modes, contents, link targets), or a tar archive's content hash. */
static int copy_hash(const char *store, const struct cove_template_step *t, char hex[SHA256_HEX],
                     char *err, size_t errlen)
{
	if (!t->nsrcs)
		return file_hash(store, t->local, "COPY archive", hex, err, errlen);
	struct ctx c;
	int r = ctx_open(&c, t->local, err, errlen);
	if (r < 0)
		return r;
	struct ctx_files f = { 0 };
	r = ctx_resolve(&c, (const char *const *)t->srcs, t->nsrcs, false, &f, err, errlen);
	if (r == 0)
		sha256_hex(f.hash, hex);
	ctx_files_free(&f);
	ctx_close(&c);
	return r;
}

int template_base_id(const char *store, const struct cove_template_spec *s, char *out, size_t len,
                     char *err, size_t errlen)
{
	char h[SHA256_HEX], agent[SHA256_HEX];
	int r;
	if (s->from_template) {
		struct cove_template_manifest m;
		if ((r = cove_template_load(s->from_template, &m, err, errlen)) < 0)
			return r;
		snprintf(out, len, "template %s", m.inputs_hash);
		cove_template_manifest_free(&m);
		return 0;
	}
	if (!s->from)
		return file_hash(store, s->image, "image", out, err, errlen);
	/* An image: what the reference names, through the stat cache (an
	 * archive's content, an OCI layout's index.json; a registry's
	 * reference is pulled again only by a forced build), and the agent
	 * put into it. */
	struct image_ref ref;
	char p[PATH_MAX + 16];
	if ((r = image_ref_parse(s->from, &ref, err, errlen)) < 0)
		return r;
	snprintf(p, sizeof(p), "%s%s", ref.path, ref.kind == IMAGE_REF_OCI ? "/index.json" : "");
	if (ref.kind == IMAGE_REF_REGISTRY)
		snprintf(h, sizeof(h), "registry");
	else if ((r = file_hash(store, p, "image", h, err, errlen)) < 0)
		return r;
	if (!s->agent)
		return errf(err, errlen, -EINVAL, "no cove-agent to put into the image");
	if ((r = file_hash(store, s->agent, "cove-agent", agent, err, errlen)) < 0)
		return r;
	snprintf(out, len, "from %s %s:%s agent %s", h, ref.path, ref.tag, agent);
	return 0;
}

int cove_template_hash_keys(const struct cove_template_spec *s, char (*keys)[SHA256_HEX],
                            char hex[SHA256_HEX], char *err, size_t errlen)
{
	char store[PATH_MAX], vmm[SHA256_HEX], kernel[SHA256_HEX], base[PATH_MAX + 256];
	int r = cove_template_store(store, sizeof(store), err, errlen);
	if (r < 0 || (r = file_hash(store, s->vmm, "cove-vmm", vmm, err, errlen)) < 0 ||
	    (r = file_hash(store, s->kernel, "kernel", kernel, err, errlen)) < 0 ||
	    (r = template_base_id(store, s, base, sizeof(base), err, errlen)) < 0)
		return r;
	char(*puts)[SHA256_HEX] = calloc(s->nsteps + 1, SHA256_HEX);
	const char **pp = calloc(s->nsteps + 1, sizeof(*pp));
	size_t k = 0;
	if (!puts || !pp)
		r = errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && i < s->nsteps; i++) {
		const struct cove_template_step *t = &s->steps[i];
		if (t->kind == COVE_STEP_PUT)
			r = file_hash(store, t->local, "--put", puts[k], err, errlen);
		else if (t->kind == COVE_STEP_COPY)
			r = copy_hash(store, t, puts[k], err, errlen);
		else
			continue;
		pp[k] = puts[k];
		k++;
	}
	if (r == 0)
		template_hash_inputs(s, vmm, kernel, base, pp, keys, hex);
	free(puts);
	free(pp);
	return r;
}

int cove_template_hash(const struct cove_template_spec *s, char hex[SHA256_HEX], char *err,
                       size_t errlen)
{
	return cove_template_hash_keys(s, NULL, hex, err, errlen);
}

/* ---- directories ---- */

/* Removes a template or build directory (files only, never following a
 * link) and the directory itself. */
void template_remove_dir(const char *path)
{
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				(void)unlinkat(dfd, e->d_name, 0);
		closedir(d);
	} else if (dfd >= 0) {
		close(dfd);
	}
	rmdir(path);
}

int template_read_manifest(const char *dir, struct cove_template_manifest *m, char *err,
                           size_t errlen)
{
	char p[PATH_MAX + 256];
	snprintf(p, sizeof(p), "%s/%s", dir, COVE_TEMPLATE_FILE);
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "%s: %s", p, strerror(errno));
	/* Sized by fstat (a manifest is a few hundred bytes; a 1 MiB buffer
	 * is an mmap and a munmap per read), at most 1 MiB. */
	struct stat st;
	size_t cap = fstat(fd, &st) == 0 && st.st_size >= 0 && st.st_size < (1 << 20)
	                 ? (size_t)st.st_size + 1
	                 : (size_t)1 << 20;
	char *buf = malloc(cap + 1);
	ssize_t n = buf ? read_full(fd, buf, cap) : -ENOMEM;
	close(fd);
	int r = n < 0 ? errf(err, errlen, (int)n, "%s: %s", p, strerror((int)-n))
	              : template_manifest_parse(buf, (size_t)n, m, err, errlen);
	free(buf);
	return r;
}

/* The store (into store) and NAME's directory in it (into dir), which must
 * exist as a directory; a one-line error otherwise. */
#define TEMPLATE_DIR_MAX (PATH_MAX + COVE_TEMPLATE_NAME_MAX + 2)
static int template_dir(const char *name, char store[PATH_MAX], char dir[TEMPLATE_DIR_MAX],
                        char *err, size_t errlen)
{
	if (!cove_template_name_valid(name))
		return errf(err, errlen, -EINVAL, "invalid template name '%s'", name ? name : "");
	int r = cove_template_store(store, PATH_MAX, err, errlen);
	if (r < 0)
		return r;
	snprintf(dir, TEMPLATE_DIR_MAX, "%s/%s", store, name);
	struct stat st;
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return errf(err, errlen, -ENOENT, "no template '%s' in %s", name, store);
	return 0;
}

int cove_template_load(const char *name, struct cove_template_manifest *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	char store[PATH_MAX], dir[TEMPLATE_DIR_MAX];
	int r = template_dir(name, store, dir, err, errlen);
	if (r < 0)
		return r;
	if ((r = template_read_manifest(dir, m, err, errlen)) < 0)
		return r;
	if (strcmp(m->spec.name, name)) {
		cove_template_manifest_free(m);
		return errf(err, errlen, -EINVAL, "template '%s': its template.json names '%s'",
		            name, m->spec.name);
	}
	return 0;
}

/* ---- ls, rm ---- */

uint64_t template_dir_bytes(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	uint64_t sum = 0;
	struct dirent *e;
	struct stat st;
	while ((e = readdir(d)))
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_blocks * 512;
	closedir(d);
	return sum;
}

static int info_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cove_template_info *)a)->name,
	              ((const struct cove_template_info *)b)->name);
}

int cove_template_list(struct cove_template_info **out, size_t *count, char *err, size_t errlen)
{
	*out = NULL;
	*count = 0;
	char store[PATH_MAX];
	int r = cove_template_store(store, sizeof(store), err, errlen);
	if (r < 0)
		return r;
	DIR *d = opendir(store);
	if (!d)
		return errf(err, errlen, -errno, "%s: %s", store, strerror(errno));
	struct cove_template_info *v = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!cove_template_name_valid(e->d_name))
			continue; /* ., .., .lock, .hash, .build-* */
		char dir[PATH_MAX + 300];
		snprintf(dir, sizeof(dir), "%s/%s", store, e->d_name);
		struct cove_template_manifest m;
		char e2[256];
		if (template_read_manifest(dir, &m, e2, sizeof(e2)) < 0)
			continue;
		struct cove_template_info *nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			cove_template_manifest_free(&m);
			r = errf(err, errlen, -ENOMEM, "out of memory");
			break;
		}
		v = nv;
		snprintf(v[n].name, sizeof(v[n].name), "%.*s", COVE_TEMPLATE_NAME_MAX, e->d_name);
		memcpy(v[n].inputs_hash, m.inputs_hash, SHA256_HEX);
		v[n].created = m.created;
		v[n].bytes = template_dir_bytes(dir);
		n++;
		cove_template_manifest_free(&m);
	}
	closedir(d);
	if (r < 0) {
		free(v);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(*v), info_cmp);
	*out = v;
	*count = n;
	return 0;
}

int cove_template_remove(const char *name, char *err, size_t errlen)
{
	char store[PATH_MAX], dir[TEMPLATE_DIR_MAX], gone[PATH_MAX + 120];
	int r = template_dir(name, store, dir, err, errlen);
	if (r < 0)
		return r;
	int fd = template_lock_open(store, name, err, errlen);
	if (fd < 0)
		return fd;
	if ((r = flock_wait(fd, LOCK_EX, LOCK_RM_WAIT_MS)) < 0) {
		close(fd);
		return errf(err, errlen, r, "template '%s' is in use (waited %d s)", name,
		            LOCK_RM_WAIT_MS / 1000);
	}
	/* Renamed away first, so that no one finds it half removed. */
	snprintf(gone, sizeof(gone), "%s/.rm-%s.%d", store, name, (int)getpid());
	if (rename(dir, gone) < 0)
		r = errf(err, errlen, -errno, "cannot remove '%s': %s", dir, strerror(errno));
	else
		template_remove_dir(gone);
	close(fd);
	cove_memcache_prune(); /* its memory's cached copy, if any */
	return r;
}
