/* cove_template_prune (template_prune.h, docs/templates.md "Caches"): the
 * store's step snapshots (.steps/) and imported root file systems
 * (.images/rootfs/) that no template's disk is made from.  A template's
 * disk is a qcow2 chain down to a root file system, through the steps it
 * was built from: every file on those chains stays.  Builds hold the
 * store's prune lock shared; prune takes it exclusive, so it never removes
 * a step that a running build restored from or is about to keep. */
#include "lib/template/template_prune.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "lib/template/template_build.h"
#include "lib/template/template_rootfs.h"
#include "lib/template/template_store.h"
#include "qcow2_create.h"

#define PRUNE_LOCK_WAIT_MS 5000
#define CHAIN_MAX          64

/* The files some template's disk is made of (realpaths). */
struct live {
	char **v;
	size_t n, cap;
};

static int live_add(void *opaque, const char *file)
{
	struct live *l = opaque;
	char *p = realpath(file, NULL);
	if (!p)
		return -errno;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			free(p);
			return -ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = p;
	return 0;
}

static bool live_has(const struct live *l, const char *file)
{
	char *p = realpath(file, NULL);
	bool found = false;
	for (size_t i = 0; p && !found && i < l->n; i++)
		found = !strcmp(l->v[i], p);
	free(p);
	return found;
}

static void live_free(struct live *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static bool is_disk(const char *name)
{
	return !strncmp(name, "disk", 4) &&
	       (strstr(name, ".qcow2") || strstr(name, ".img") || strstr(name, ".raw"));
}

/* Every disk file of every template in the store, down its chain. */
static int collect_live(const char *store, struct live *l, char *err, size_t errlen)
{
	DIR *d = opendir(store);
	if (!d)
		return errf(err, errlen, -errno, "%s: %s", store, strerror(errno));
	int r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char dir[PATH_MAX];
		if (snprintf(dir, sizeof(dir), "%s/%s", store, e->d_name) >= (int)sizeof(dir))
			continue;
		DIR *t = opendir(dir);
		struct dirent *f;
		while (r == 0 && t && (f = readdir(t))) {
			if (!is_disk(f->d_name))
				continue;
			char disk[PATH_MAX];
			if (snprintf(disk, sizeof(disk), "%s/%s", dir, f->d_name) >=
			    (int)sizeof(disk))
				continue;
			r = qcow2_chain_walk(disk, CHAIN_MAX, live_add, l, NULL, err, errlen);
		}
		if (t)
			closedir(t);
	}
	closedir(d);
	return r;
}

/* A step snapshot is live when one of its disks is. */
static bool step_live(const struct live *l, const char *dir)
{
	DIR *d = opendir(dir);
	bool found = false;
	struct dirent *e;
	while (d && !found && (e = readdir(d))) {
		char p[PATH_MAX];
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p))
			continue;
		found = is_disk(e->d_name) && live_has(l, p);
	}
	if (d)
		closedir(d);
	return found;
}

/* Each entry of store/sub that is not live goes (kept: a dry run). */
static void sweep(const char *store, const char *sub, bool steps, const struct live *l,
                  bool dry_run, struct cove_template_pruned *out)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/%s", store, sub);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[PATH_MAX];
		struct stat st;
		if (snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= (int)sizeof(p))
			continue;
		if (lstat(p, &st) < 0)
			continue;
		if (steps && S_ISDIR(st.st_mode)) {
			/* .tmp-*: a snapshot a build never finished (none runs now). */
			if (e->d_name[0] != '.' && step_live(l, p))
				continue;
			out->steps++;
			out->bytes += template_dir_bytes(p);
			if (!dry_run)
				template_remove_dir(p);
		} else if (!steps && S_ISREG(st.st_mode) && !live_has(l, p)) {
			out->rootfs++;
			out->bytes += (uint64_t)st.st_blocks * 512;
			if (!dry_run)
				unlink(p);
		}
	}
	if (d)
		closedir(d);
}

int template_prune_lock(const char *store, bool exclusive, char *err, size_t errlen)
{
	int fd = template_lock_open(store, ".prune", err, errlen);
	if (fd < 0)
		return fd;
	int r = flock_wait(fd, exclusive ? LOCK_EX : LOCK_SH,
	                   exclusive ? PRUNE_LOCK_WAIT_MS : LOCK_BUILD_WAIT_MS);
	if (r < 0) {
		close(fd);
		return errf(err, errlen, r,
		            exclusive ? "a template build is running; try again later"
		                      : "waited for cove template prune: %s",
		            strerror(-r));
	}
	return fd;
}

int cove_template_prune(bool dry_run, struct cove_template_pruned *out, char *err, size_t errlen)
{
	*out = (struct cove_template_pruned){ 0 };
	char store[PATH_MAX];
	int r = cove_template_store(store, sizeof(store), err, errlen);
	if (r < 0)
		return r;
	int fd = template_prune_lock(store, true, err, errlen);
	if (fd < 0)
		return fd;
	struct live l = { 0 };
	r = collect_live(store, &l, err, errlen);
	if (r == 0) {
		sweep(store, STEPS_DIR, true, &l, dry_run, out);
		sweep(store, ROOTFS_CACHE_DIR "/rootfs", false, &l, dry_run, out);
	}
	live_free(&l);
	close(fd);
	return r;
}
