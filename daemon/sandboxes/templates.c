/* The templates coved's creates restore (lib/template.h): templateID
 * "base" (or an image name) is the base template of that image with the
 * request's CPUs, memory, disk size and whether it has a NIC, built on
 * first use; a name `cove template build` made in templates_dir is that
 * template, rebuilt when its inputs changed; a built-in name (E2B's
 * code-interpreter-v1) is an image's template with its start command,
 * built on first use like a base template. */
#include "daemon/sandboxes/templates.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cove.h"
#include "daemon/sandboxes/state.h"
#include "errf.h"
#include "lib/base/sha256.h"
#include "lib/template/template.h"

/* E2B's template names that an image `make` builds stands for: the
 * image's template with a server started before the snapshot, so every
 * sandbox from it has the server running.  A config `templates` entry or
 * a store template of the same name wins. */
static const struct coved_builtin builtins[] = {
	{
	    .tid = "code-interpreter-v1",
	    .image = "code-interpreter",
	    /* rootfs/code-interpreter/server.py: E2B's code interpreter */
	    .start = "exec python3 /opt/cove/code-interpreter/server.py",
	    .ready_port = 49999,
	    .ready_timeout_s = 900, /* a cold boot, a Python kernel and its imports */
	    .min_memory_mib = 512,
	},
};

const struct coved_builtin *coved_template_builtins(size_t *n)
{
	*n = sizeof(builtins) / sizeof(builtins[0]);
	return builtins;
}

/* The built-in template tid stands for (NULL: none, or the config or the
 * store has that name). */
static const struct coved_builtin *builtin_of(struct coved *d, const char *tid)
{
	if (json_object_get(d->cfg.templates, tid) || coved_template_named(d, tid))
		return NULL;
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (strcmp(builtins[i].tid, tid) == 0)
			return &builtins[i];
	return NULL;
}

/* A built-in's spec: the base template's with the start command, under a
 * name of its own (base-TID-...: the image's plain base template keeps
 * base-IMAGE-...), so neither rebuilds the other. */
static int builtin_spec(const struct coved_builtin *b, struct cove_template_spec *s, char *err,
                        size_t len)
{
	if (!(s->start_cmd = strdup(b->start)))
		return errf(err, len, -ENOMEM, "out of memory");
	s->ready_port = b->ready_port;
	s->ready_timeout_s = b->ready_timeout_s;
	char hash[9], disk[32] = "";
	snprintf(hash, sizeof(hash), "%s", s->name + strlen(s->name) - 8); /* of the paths */
	if (s->disk_size)
		snprintf(disk, sizeof(disk), "-d%lluM", (unsigned long long)(s->disk_size >> 20));
	snprintf(s->name, sizeof(s->name), "base-%s-%ux%llu%s%s-%s", b->tid, s->cpus,
	         (unsigned long long)s->memory_mib, disk, s->net ? "-net" : "", hash);
	return 0;
}

static void note(void *opaque, const char *line)
{
	(void)opaque;
	fprintf(stderr, "coved: %s\n", line);
}

bool coved_template_named(struct coved *d, const char *tid)
{
	if (!d->cfg.templates_dir || !cove_template_name_valid(tid) || !strcmp(tid, "base"))
		return false;
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s/%s", d->cfg.templates_dir, tid, COVE_TEMPLATE_FILE);
	return lstat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* What the last creates of a base template resolved to, so that the next
 * create of that shape with inputs unchanged skips resolving it again:
 * three realpaths, the store's directories, the inputs' hash cache (about
 * 50 system calls of a warm create's 200).  Unchanged means the same file
 * (device, inode) with the same size, mtime and ctime at each path as given,
 * the assumption the hash cache itself makes; and the template must still
 * be the build of those inputs when its lock is taken
 * (cove_template_hold), so a removal or a rebuild by anyone falls back to
 * cove_template_ensure. */
struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

struct tmemo {
	uint8_t key[SHA256_LEN]; /* of the store, paths and shape */
	struct file_id in[3];    /* cove-vmm, kernel, image */
	char dir[PATH_MAX];
	char hash[SHA256_HEX];
	uint64_t used; /* the least recently used goes first */
};

#define TMEMO_MAX 16
static struct tmemo tmemo[TMEMO_MAX];
static uint64_t tmemo_clock;
static pthread_mutex_t tmemo_mu = PTHREAD_MUTEX_INITIALIZER;

/* builtin: the built-in template's name (its own template of the same
 * image and shape), or NULL for the image's base template. */
static void tmemo_key(const struct coved *d, const struct cove_config *cfg, const char *builtin,
                      uint8_t key[SHA256_LEN])
{
	struct sha256 h;
	char shape[96];
	int n = snprintf(shape, sizeof(shape), "%u %llu %llu %d", cfg->cpus,
	                 (unsigned long long)cfg->memory_mib, (unsigned long long)cfg->disk_size,
	                 cfg->net.mode != COVE_NET_OFF);
	sha256_init(&h);
	const char *parts[] = { d->cfg.templates_dir, cfg->vmm, cfg->kernel, cfg->image, builtin };
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		sha256_update(&h, parts[i] ? parts[i] : "", strlen(parts[i] ? parts[i] : "") + 1);
	sha256_update(&h, shape, (size_t)n);
	sha256_final(&h, key);
}

static bool inputs_id(const struct cove_config *cfg, struct file_id in[3])
{
	const char *paths[3] = { cfg->vmm, cfg->kernel, cfg->image };
	for (int i = 0; i < 3; i++) {
		struct stat st;
		if (!paths[i] || stat(paths[i], &st) < 0)
			return false;
		in[i] =
		    (struct file_id){ st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim };
	}
	return true;
}

static bool same_id(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* The remembered template for key, held (0, *dir malloc'ed) or not (1). */
static int tmemo_use(const uint8_t key[SHA256_LEN], const struct file_id now[3], char **dir,
                     int *lockfd)
{
	struct tmemo m;
	bool found = false;
	pthread_mutex_lock(&tmemo_mu);
	for (int i = 0; i < TMEMO_MAX && !found; i++) {
		if (tmemo[i].used && !memcmp(tmemo[i].key, key, SHA256_LEN)) {
			tmemo[i].used = ++tmemo_clock;
			m = tmemo[i];
			found = true;
		}
	}
	pthread_mutex_unlock(&tmemo_mu);
	for (int i = 0; found && i < 3; i++)
		found = same_id(&m.in[i], &now[i]);
	if (!found || cove_template_hold(m.dir, m.hash, lockfd) != 0)
		return 1;
	if (!(*dir = strdup(m.dir))) {
		close(*lockfd);
		*lockfd = -1;
		return 1;
	}
	return 0;
}

static void tmemo_put(const uint8_t key[SHA256_LEN], const struct file_id in[3], const char *dir)
{
	struct tmemo m = { .used = 0 };
	memcpy(m.key, key, SHA256_LEN);
	memcpy(m.in, in, sizeof(m.in));
	if (strlen(dir) >= sizeof(m.dir) || cove_template_built_hash(dir, m.hash) < 0)
		return;
	snprintf(m.dir, sizeof(m.dir), "%s", dir);
	pthread_mutex_lock(&tmemo_mu);
	int slot = 0;
	for (int i = 0; i < TMEMO_MAX; i++) {
		if (tmemo[i].used && !memcmp(tmemo[i].key, key, SHA256_LEN)) {
			slot = i;
			break;
		}
		if (tmemo[i].used < tmemo[slot].used)
			slot = i;
	}
	m.used = ++tmemo_clock;
	tmemo[slot] = m;
	pthread_mutex_unlock(&tmemo_mu);
}

int coved_template_for(struct coved *d, const char *tid, struct cove_config *cfg, bool net_given,
                       char **dir, int *lockfd, char *msg, size_t len)
{
	*dir = NULL;
	*lockfd = -1;
	if (!d->cfg.templates_dir)
		return 1;
	bool named = !cfg->image; /* resolve_template found no image: a store template */
	const struct coved_builtin *b = named ? NULL : builtin_of(d, tid);
	if (b && cfg->memory_mib < b->min_memory_mib)
		cfg->memory_mib = b->min_memory_mib;
	uint8_t key[SHA256_LEN];
	struct file_id in[3];
	bool memo = !named && inputs_id(cfg, in);
	if (memo) {
		tmemo_key(d, cfg, b ? b->tid : NULL, key);
		if (tmemo_use(key, in, dir, lockfd) == 0) {
			cfg->disk_size = 0; /* the template's */
			return 0;
		}
	}
	cove_template_set_store(d->cfg.templates_dir);
	struct cove_template_manifest m = { 0 };
	char err[600], path[PATH_MAX + 128];
	int r;
	if (named) {
		r = cove_template_load(tid, &m, err, sizeof(err));
		char *vmm = r == 0 ? realpath(cfg->vmm, NULL) : NULL;
		if (r == 0 && !vmm)
			r = errf(err, sizeof(err), -ENOENT, "cove-vmm '%s': %s", cfg->vmm,
			         strerror(errno));
		if (r == 0) {
			free(m.spec.vmm);
			m.spec.vmm = vmm;
		}
	} else {
		r = cove_template_base_spec(&m.spec, cfg,
		                            cfg->net.mode != COVE_NET_OFF ? COVE_TEMPLATE_NET_NONE
		                                                          : COVE_TEMPLATE_NET_OFF,
		                            err, sizeof(err));
		if (r == 0 && b)
			r = builtin_spec(b, &m.spec, err, sizeof(err));
	}
	const struct cove_template_io io = { .note = note };
	/* A template built from an image, a parent or a folder is used as it
	 * is: only a build (the CLI, the API) makes it again. */
	if (r == 0 && named && cove_template_sealed(&m.spec))
		r = cove_template_use(tid, path, sizeof(path), lockfd, err, sizeof(err));
	else if (r == 0)
		r = cove_template_ensure(&m.spec, false, &io, path, sizeof(path), lockfd, err,
		                         sizeof(err));
	if (r != 0) {
		cove_template_manifest_free(&m);
		errf(msg, len, 500, "template '%s': %s", tid, err);
		return 500;
	}
	if (memo) /* the inputs as they were before the hashing */
		tmemo_put(key, in, path);
	cfg->disk_size = 0; /* the template's */
	if (named) {
		cfg->cpus = m.spec.cpus;
		cfg->memory_mib = m.spec.memory_mib;
		/* Without a NIC in the template there is no network to give,
		 * unless the request asked for one (then the restore says no). */
		if (m.spec.net == COVE_TEMPLATE_NET_OFF && !net_given)
			cfg->net.mode = COVE_NET_OFF;
		if (m.spec.net != COVE_TEMPLATE_NET_OFF && cfg->net.mode == COVE_NET_OFF)
			cfg->net.mode = COVE_NET_NONE; /* not the build's policy */
	}
	cove_template_manifest_free(&m);
	if (!(*dir = strdup(path))) {
		close(*lockfd);
		*lockfd = -1;
		errf(msg, len, 500, "out of memory");
		return 500;
	}
	return 0;
}

/* The templates every tenant shares: the config's templates and images
 * ("base": its default image; *image malloc'ed), else a template of the
 * store (0 with *image NULL).  404 when there is none. */
int coved_template_shared(struct coved *d, const char *tid, char **image, char *msg, size_t len)
{
	*image = NULL;
	const char *name = tid;
	if (strcmp(tid, "base") == 0)
		name = d->cfg.default_image;
	json_t *t = json_object_get(d->cfg.templates, tid);
	if (json_is_string(t))
		name = json_string_value(t);
	if (!json_is_string(t) && coved_template_named(d, tid))
		return 0; /* neither: a template of the store */
	const struct coved_builtin *b = builtin_of(d, tid);
	if (b)
		name = b->image;
	char *p = cove_image_path(name);
	struct stat st;
	if (!p || stat(p, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(p);
		errf(msg, len, 404, "template '%s' not found (no image '%s'%s)", tid, name,
		     b ? ": make rootfs-code-interpreter" : "");
		return 404;
	}
	*image = p;
	return 0;
}
