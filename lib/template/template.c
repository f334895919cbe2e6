/* Templates (template.h, docs/templates.md "Templates"): a spec from a
 * configuration, and building one (a cold boot, the steps, a snapshot)
 * and swapping it into place; the store itself is template_store.c's. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cove_limits.h"
#include "errf.h"
#include "io.h"
#include "lib/base/cove_types.h"
#include "lib/base/handle.h"
#include "lib/base/registry.h"
#include "lib/base/sha256.h"
#include "lib/template/template.h"
#include "lib/template/template_build.h"
#include "lib/template/template_json.h"
#include "lib/template/template_manifest.h"
#include "lib/template/template_prune.h"
#include "lib/template/template_store.h"
#include "lib/vmm/memcache.h"

static char *abs_path(const char *p, const char *what, char *err, size_t errlen)
{
	char *a = p ? realpath(p, NULL) : NULL;
	if (!a)
		errf(err, errlen, p ? -errno : -EINVAL, "%s '%s': %s", what, p ? p : "(none)",
		     p ? strerror(errno) : "not configured");
	return a;
}

int cove_template_spec_init(struct cove_template_spec *s, const char *name,
                            const struct cove_config *cfg, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	if (!cove_template_name_valid(name))
		return errf(err, errlen, -EINVAL,
		            "invalid template name '%s': use 1 to %d of A-Z a-z 0-9 _ . -, not "
		            "starting with '.'",
		            name ? name : "", COVE_TEMPLATE_NAME_MAX);
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->cpus = cfg->cpus ? cfg->cpus : COVE_CPUS_DEFAULT;
	s->memory_mib = cfg->memory_mib ? cfg->memory_mib : COVE_MEMORY_DEFAULT_MIB;
	s->disk_size = cfg->disk_size;
	if (!(s->vmm = abs_path(cfg->vmm, "cove-vmm", err, errlen)) ||
	    !(s->kernel = abs_path(cfg->kernel, "kernel", err, errlen)) ||
	    !(s->image = abs_path(cfg->image, "image", err, errlen))) {
		cove_template_spec_free(s);
		return -ENOENT;
	}
	return 0;
}

int cove_template_base_spec(struct cove_template_spec *s, const struct cove_config *cfg, int net,
                            char *err, size_t errlen)
{
	int r = cove_template_spec_init(s, "base", cfg, err, errlen);
	if (r < 0)
		return r;
	s->net = net;
	/* The paths pick the name, the contents the hash inside it: a
	 * changed image rebuilds its base template in place. */
	struct sha256 h;
	uint8_t d[SHA256_LEN];
	char hex[SHA256_HEX], stem[24], disk[32] = "";
	sha256_init(&h);
	sha256_update(&h, s->vmm, strlen(s->vmm) + 1);
	sha256_update(&h, s->kernel, strlen(s->kernel) + 1);
	sha256_update(&h, s->image, strlen(s->image) + 1);
	sha256_final(&h, d);
	sha256_hex(d, hex);
	const char *b = strrchr(s->image, '/') + 1;
	size_t n = 0;
	for (; b[n] && b[n] != '.' && n < sizeof(stem) - 1; n++)
		stem[n] = cove_template_name_valid((char[]){ b[n], 0 }) ? b[n] : '_';
	stem[n] = 0;
	if (s->disk_size)
		snprintf(disk, sizeof(disk), "-d%lluM", (unsigned long long)(s->disk_size >> 20));
	snprintf(s->name, sizeof(s->name), "base-%s-%ux%llu%s%s-%.8s", n ? stem : "image", s->cpus,
	         (unsigned long long)s->memory_mib, disk, net ? "-net" : "", hex);
	return 0;
}

/* ---- building ---- */

static int write_manifest(const char *dir, const struct cove_template_manifest *m, char *err,
                          size_t errlen)
{
	char *text = template_manifest_dump(m);
	if (!text)
		return errf(err, errlen, -ENOMEM, "out of memory");
	char p[PATH_MAX + 256];
	snprintf(p, sizeof(p), "%s/%s", dir, COVE_TEMPLATE_FILE);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int r = fd < 0 ? -errno : 0;
	if (r == 0 && (r = write_all(fd, text, strlen(text))) == 0 && fsync(fd) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	free(text);
	return r < 0 ? errf(err, errlen, r, "%s: %s", p, strerror(-r)) : 0;
}

/* Puts the built directory tmp in final's place: a plain rename when there
 * is none, else an exchange (readers see the old or the new one, never
 * neither), then the old one removed. */
static int swap_in(const char *store, const char *tmp, const char *final, char *err, size_t errlen)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) < 0) {
		if (errno != EEXIST ||
		    renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) < 0)
			return errf(err, errlen, -errno, "cannot move the template to '%s': %s",
			            final, strerror(errno));
		template_remove_dir(tmp); /* the old one, now at tmp's name */
	}
	int dfd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
}

static int build(const struct cove_template_spec *s, const char *store, const char *final,
                 const char *hash, const char (*keys)[SHA256_HEX], bool force,
                 const struct cove_template_io *io, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 128];
	uint32_t rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)time(NULL);
	snprintf(tmp, sizeof(tmp), "%s/.build-%s.%d.%08x", store, s->name, (int)getpid(), rnd);
	struct cove_template_manifest m = { .spec = *s, .created = (int64_t)time(NULL) };
	int r = template_build(store, s, keys, force, tmp, io, &m.config, err, errlen);
	memcpy(m.inputs_hash, hash, SHA256_HEX);
	if (r == 0)
		r = write_manifest(tmp, &m, err, errlen);
	if (r == 0)
		r = swap_in(store, tmp, final, err, errlen);
	if (r != 0)
		template_remove_dir(tmp); /* nothing half-written stays */
	cove_template_config_free(&m.config);
	return r;
}

/* Builds of name that a killed builder left: with the exclusive lock held
 * no other builder of name runs, so every .build-<name>.* is stale. */
static void remove_stale_builds(const char *store, const char *name)
{
	char prefix[COVE_TEMPLATE_NAME_MAX + 16], p[PATH_MAX + 400];
	int n = snprintf(prefix, sizeof(prefix), ".build-%s.", name);
	DIR *d = opendir(store);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, prefix, (size_t)n))
			continue;
		/* Exactly <pid>.<8 hex> after it: ".build-web.1.5.x" is web.1's. */
		const char *r = e->d_name + n;
		size_t digits = strspn(r, "0123456789");
		if (!digits || r[digits] != '.' || strlen(r + digits + 1) != 8 ||
		    strspn(r + digits + 1, "0123456789abcdef") != 8)
			continue;
		snprintf(p, sizeof(p), "%s/%s", store, e->d_name);
		template_remove_dir(p);
	}
	closedir(d);
}

/* Whether the template at dir was built from inputs hashing to hash. */
static bool up_to_date(const char *dir, const char *hash)
{
	struct cove_template_manifest m;
	char e[256];
	if (template_read_manifest(dir, &m, e, sizeof(e)) < 0)
		return false;
	bool same = !strcmp(m.inputs_hash, hash);
	cove_template_manifest_free(&m);
	return same;
}

static int ensure_locked(const struct cove_template_spec *s, bool force,
                         const struct cove_template_io *io, const char *store, const char *hash,
                         const char (*keys)[SHA256_HEX], char *dir, size_t dirlen, int *lockfd,
                         char *err, size_t errlen);

int cove_template_ensure(const struct cove_template_spec *s, bool force,
                         const struct cove_template_io *io, char *dir, size_t dirlen, int *lockfd,
                         char *err, size_t errlen)
{
	*lockfd = -1;
	char store[PATH_MAX], hash[SHA256_HEX], rt[PATH_MAX];
	/* The runtime base refuses us before anything is built (one line). */
	int r = registry_base(rt, sizeof(rt), err, errlen);
	if (r < 0 || (r = cove_template_store(store, sizeof(store), err, errlen)) < 0)
		return r;
	char(*keys)[SHA256_HEX] = calloc(s->nsteps + 1, SHA256_HEX);
	if (!keys)
		return errf(err, errlen, -ENOMEM, "out of memory");
	r = cove_template_hash_keys(s, keys, hash, err, errlen);
	if (r == 0)
		r = ensure_locked(s, force, io, store, hash, (const char(*)[SHA256_HEX])keys, dir,
		                  dirlen, lockfd, err, errlen);
	free(keys);
	return r;
}

static int ensure_locked(const struct cove_template_spec *s, bool force,
                         const struct cove_template_io *io, const char *store, const char *hash,
                         const char (*keys)[SHA256_HEX], char *dir, size_t dirlen, int *lockfd,
                         char *err, size_t errlen)
{
	int r;
	if ((size_t)snprintf(dir, dirlen, "%s/%s", store, s->name) >= dirlen)
		return errf(err, errlen, -ENAMETOOLONG, "template path is too long");
	int fd = template_lock_open(store, s->name, err, errlen);
	if (fd < 0)
		return fd;
	/* Most calls find it built: a shared lock, as the restores hold. */
	if (!force && (r = flock_wait(fd, LOCK_SH, LOCK_BUILD_WAIT_MS)) == 0 &&
	    up_to_date(dir, hash)) {
		*lockfd = fd;
		return 0;
	}
	flock(fd, LOCK_UN);
	/* One at a time decides (and builds); the others wait here, not for
	 * the use lock, which every restore holds shared. */
	char bname[COVE_TEMPLATE_NAME_MAX + 8];
	snprintf(bname, sizeof(bname), ".build-%s", s->name);
	int bfd = template_lock_open(store, bname, err, errlen);
	if (bfd < 0) {
		close(fd);
		return bfd;
	}
	if ((r = flock_wait(bfd, LOCK_EX, LOCK_BUILD_WAIT_MS)) < 0) {
		close(bfd);
		close(fd);
		return errf(err, errlen, r, "template '%s': waited %d s for another build: %s",
		            s->name, LOCK_BUILD_WAIT_MS / 1000, strerror(-r));
	}
	struct stat st;
	bool exists = lstat(dir, &st) == 0;
	/* Someone else may have built it while we waited: use theirs. */
	if (force || !exists || !up_to_date(dir, hash)) {
		/* The old one's restores end first (a rebuild replaces it). */
		if ((r = flock_wait(fd, LOCK_EX, LOCK_BUILD_WAIT_MS)) < 0) {
			close(bfd);
			close(fd);
			return errf(err, errlen, r,
			            "template '%s': waited %d s for its restores: %s", s->name,
			            LOCK_BUILD_WAIT_MS / 1000, strerror(-r));
		}
		remove_stale_builds(store, s->name);
		if (exists)
			template_note(io, "template %s: its inputs changed, rebuilding it",
			              s->name);
		else
			template_note(io, "template %s: building it (cached in %s)", s->name,
			              store);
		int pfd = template_prune_lock(store, false, err, errlen);
		r = pfd < 0 ? pfd : build(s, store, dir, hash, keys, force, io, err, errlen);
		if (pfd >= 0)
			close(pfd);
		if (r != 0) {
			close(bfd);
			close(fd);
			return r;
		}
		template_note(io, "template %s: built (inputs %.16s)", s->name, hash);
		/* Its memory into the memory cache now, not in its first
		 * restore (a no-op where there is no cache). */
		char copy[PATH_MAX], why[PATH_MAX + 128];
		(void)memcache_get(dir, copy, sizeof(copy), why, sizeof(why));
	}
	/* Shared (a downgrade after a build): others may restore it now. */
	r = flock_wait(fd, LOCK_SH, LOCK_BUILD_WAIT_MS);
	close(bfd);
	if (r < 0) {
		close(fd);
		return errf(err, errlen, r, "template '%s': lock: %s", s->name, strerror(-r));
	}
	*lockfd = fd;
	return 0;
}

int cove_template_built_hash(const char *dir, char hash[SHA256_HEX])
{
	struct cove_template_manifest m;
	char e[256];
	int r = template_read_manifest(dir, &m, e, sizeof(e));
	if (r < 0)
		return r;
	memcpy(hash, m.inputs_hash, SHA256_HEX);
	hash[SHA256_HEX - 1] = 0;
	cove_template_manifest_free(&m);
	return 0;
}

int cove_template_hold(const char *dir, const char *hash, int *lockfd)
{
	*lockfd = -1;
	const char *slash = strrchr(dir, '/');
	char store[PATH_MAX], e[256];
	if (!slash || slash == dir || (size_t)(slash - dir) >= sizeof(store) ||
	    !cove_template_name_valid(slash + 1))
		return -EINVAL;
	snprintf(store, sizeof(store), "%.*s", (int)(slash - dir), dir);
	int fd = template_lock_open(store, slash + 1, e, sizeof(e));
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		int r = errno == EWOULDBLOCK || errno == EINTR ? 1 : -errno;
		close(fd);
		return r; /* a build holds it: the slow path waits for it */
	}
	if (!up_to_date(dir, hash)) {
		close(fd);
		return 1;
	}
	*lockfd = fd;
	return 0;
}

bool cove_template_sealed(const struct cove_template_spec *s)
{
	bool sealed = s->from || s->from_template;
	for (size_t i = 0; i < s->nsteps; i++)
		sealed = sealed || s->steps[i].kind == COVE_STEP_COPY;
	return sealed;
}

int cove_template_use(const char *name, char *dir, size_t dirlen, int *lockfd, char *err,
                      size_t errlen)
{
	*lockfd = -1;
	char store[PATH_MAX];
	int r = cove_template_store(store, sizeof(store), err, errlen);
	if (r < 0)
		return r;
	if (!cove_template_name_valid(name))
		return errf(err, errlen, -EINVAL, "invalid template name '%s'", name);
	snprintf(dir, dirlen, "%s/%s", store, name);
	int fd = template_lock_open(store, name, err, errlen);
	if (fd < 0)
		return fd;
	struct cove_template_manifest m;
	if ((r = flock_wait(fd, LOCK_SH, LOCK_BUILD_WAIT_MS)) < 0 ||
	    (r = template_read_manifest(dir, &m, err, errlen)) < 0) {
		if (r == -ETIMEDOUT)
			errf(err, errlen, r, "template '%s' is being built", name);
		close(fd);
		return r;
	}
	cove_template_manifest_free(&m);
	*lockfd = fd;
	return 0;
}
