/* Image sources (lib/image/oci.h): references, and the resolution of an
 * image from an index down to its config and layers, over blobs that are
 * either in the cache already (archives put them there) or copied into it
 * from an OCI layout directory, checked on the way. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"
#include "lib/image/oci.h"
#include "lib/image/oci_archive.h"
#include "lib/image/oci_cache.h"
#include "lib/image/oci_pull.h"

#define PULL_TAG "cove"

static bool tag_valid(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > IMAGE_TAG_MAX || t[0] == '.' || t[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') ||
		      (t[i] >= '0' && t[i] <= '9') || strchr("._-", t[i])))
			return false;
	return true;
}

int image_ref_parse(const char *s, struct image_ref *r, char *err, size_t errlen)
{
	static const struct {
		const char *prefix;
		enum image_ref_kind kind;
	} kinds[] = { { "oci:", IMAGE_REF_OCI },
		      { "oci-archive:", IMAGE_REF_OCI_ARCHIVE },
		      { "docker-archive:", IMAGE_REF_DOCKER_ARCHIVE } };
	memset(r, 0, sizeof(*r));
	r->kind = IMAGE_REF_REGISTRY;
	const char *rest = s ? s : "";
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(rest, kinds[i].prefix, strlen(kinds[i].prefix))) {
			r->kind = kinds[i].kind;
			rest += strlen(kinds[i].prefix);
			break;
		}
	if (r->kind == IMAGE_REF_REGISTRY) {
		if (!strncmp(rest, "docker://", 9))
			rest += 9;
		if (!oci_pull_ref_valid(rest))
			return errf(err, errlen, -EINVAL,
			            "'%.200s' is not an image reference (oci:DIR[:TAG], "
			            "oci-archive:FILE[:TAG], docker-archive:FILE or a registry's "
			            "NAME[:TAG])",
			            s ? s : "");
		snprintf(r->path, sizeof(r->path), "%s", rest);
		return 0;
	}
	size_t n = strlen(rest);
	const char *colon = strrchr(rest, ':');
	/* A last ":WORD" without '/' is a tag; a path may hold colons too. */
	if (r->kind != IMAGE_REF_DOCKER_ARCHIVE && colon && !strchr(colon, '/')) {
		if (!tag_valid(colon + 1))
			return errf(err, errlen, -EINVAL, "'%.200s': '%.200s' is not a valid tag",
			            s, colon + 1);
		snprintf(r->tag, sizeof(r->tag), "%s", colon + 1);
		n = (size_t)(colon - rest);
	}
	if (n == 0 || n >= sizeof(r->path))
		return errf(err, errlen, -EINVAL, "'%.200s': the path must be 1 to %zu bytes", s,
		            sizeof(r->path) - 1);
	memcpy(r->path, rest, n);
	r->path[n] = '\0';
	return 0;
}

void image_src_free(struct image_src *s)
{
	for (size_t i = 0; i < s->n_layers; i++)
		free(s->layers[i].path);
	free(s->layers);
	image_config_free(&s->config);
	memset(s, 0, sizeof(*s));
}

/* Where blobs come from: the cache, and an OCI layout's blobs/sha256
 * (layout_fd, -1 when there is none: an archive put them in the cache). */
struct resolver {
	struct oci_cache *c;
	int layout_fd;
	const char *what; /* the source, for messages: "oci:DIR" */
	struct image_src *out;
};

static ssize_t fd_read(void *arg, void *buf, size_t n, char *err, size_t errlen)
{
	ssize_t r;
	do
		r = read(*(int *)arg, buf, n);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errf(err, errlen, -errno, "read: %s", strerror(errno));
	return r;
}

/* The blob @d in the cache, copied there from the layout if missing.
 * @role names it in messages ("config", "layer 2 of 3"). */
static int fetch(struct resolver *rv, const struct oci_desc *d, const char *role, char *err,
                 size_t errlen)
{
	uint64_t size;
	if (oci_cache_has(rv->c, d->digest, &size)) {
		if (size != d->size)
			return errf(err, errlen, -EINVAL,
			            "%s: %s %s: size mismatch: the blob is %llu bytes, not %llu",
			            rv->what, role, d->digest, (unsigned long long)size,
			            (unsigned long long)d->size);
		return 0;
	}
	int fd = rv->layout_fd < 0 ? -1
	                           : openat(rv->layout_fd, d->digest + 7,
	                                    O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && (rv->layout_fd < 0 || errno == ENOENT))
		return errf(err, errlen, -ENOENT, "%s: blob %s (%s) is missing", rv->what,
		            d->digest, role);
	if (fd < 0)
		return errf(err, errlen, -errno, "%s: blob %s (%s): %s", rv->what, d->digest, role,
		            strerror(errno));
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		r = errf(err, errlen, -EINVAL, "%s: blob %s (%s) is not a regular file", rv->what,
		         d->digest, role);
	else if ((uint64_t)st.st_size != d->size)
		r = errf(err, errlen, -EINVAL,
		         "%s: %s %s: size mismatch: the blob is %llu bytes, not %llu", rv->what,
		         role, d->digest, (unsigned long long)st.st_size,
		         (unsigned long long)d->size);
	if (!r) {
		char why[512];
		r = oci_cache_put(rv->c, fd_read, &fd, d->digest, (int64_t)d->size, role, NULL, why,
		                  sizeof(why));
		if (r)
			errf(err, errlen, r, "%s: %s", rv->what, why);
	}
	close(fd);
	return r;
}

/* A JSON blob (index, manifest, config) fetched and read. */
static int fetch_json(struct resolver *rv, const struct oci_desc *d, const char *role, char **text,
                      size_t *len, char *err, size_t errlen)
{
	int r = fetch(rv, d, role, err, errlen);
	if (r)
		return r;
	if (d->size > OCI_JSON_MAX)
		return errf(err, errlen, -EINVAL, "%s: the %s is larger than %d bytes", rv->what,
		            role, OCI_JSON_MAX);
	return oci_cache_read(rv->c, d->digest, OCI_JSON_MAX, role, text, len, err, errlen);
}

/* Prefixes a parser's message with the source. */
static int parsed(struct resolver *rv, int r, const char *why, char *err, size_t errlen)
{
	return r ? errf(err, errlen, r, "%s: %s", rv->what, why) : 0;
}

/* The manifest's layers: fetched, and their cache paths in the result. */
static int layers(struct resolver *rv, const struct oci_manifest *m, char *err, size_t errlen)
{
	struct image_src *o = rv->out;
	if (!(o->layers = calloc(m->n_layers, sizeof(o->layers[0]))))
		return errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < m->n_layers; i++) {
		const struct oci_desc *d = &m->layers[i];
		struct image_layer *l = &o->layers[i];
		char role[64], path[sizeof(rv->c->dir) + 96];
		snprintf(role, sizeof(role), "layer %zu of %zu", i + 1, m->n_layers);
		int r = fetch(rv, d, role, err, errlen);
		if (r)
			return r;
		oci_cache_path(rv->c, d->digest, path, sizeof(path));
		(void)oci_media_kind(d->media_type, &l->comp);
		snprintf(l->digest, sizeof(l->digest), "%s", d->digest);
		l->size = d->size;
		o->n_layers = i + 1;
		if (!(l->path = strdup(path)))
			return errf(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

static int resolve_manifest(struct resolver *rv, const struct oci_desc *d, char *err, size_t errlen)
{
	char *text, why[512];
	size_t len, n_diff = 0;
	struct oci_manifest m;
	char(*diff)[OCI_DIGEST_LEN + 1] = NULL;
	int r = fetch_json(rv, d, "manifest", &text, &len, err, errlen);
	if (r)
		return r;
	r = parsed(rv, oci_parse_manifest(text, len, d->media_type, &m, why, sizeof(why)), why, err,
	           errlen);
	free(text);
	if (r)
		return r;
	r = fetch_json(rv, &m.config, "config", &text, &len, err, errlen);
	if (!r) {
		r = parsed(
		    rv,
		    oci_parse_config(text, len, &rv->out->config, &diff, &n_diff, why, sizeof(why)),
		    why, err, errlen);
		free(text);
	}
	if (!r && n_diff != m.n_layers)
		r = errf(err, errlen, -EINVAL,
		         "%s: the manifest has %zu layers, the config %zu diff_ids", rv->what,
		         m.n_layers, n_diff);
	if (!r)
		r = layers(rv, &m, err, errlen);
	if (!r) {
		snprintf(rv->out->manifest_digest, sizeof(rv->out->manifest_digest), "%s",
		         d->digest);
		snprintf(rv->out->config_digest, sizeof(rv->out->config_digest), "%s",
		         m.config.digest);
	}
	free(diff);
	oci_manifest_free(&m);
	return r;
}

/* From an index (index.json's text) to the image: by @tag (may be NULL),
 * then, for an image index, its linux/amd64 manifest. */
static int resolve_index(struct resolver *rv, const char *text, size_t len, const char *tag,
                         char *err, size_t errlen)
{
	struct oci_index ix, sub = { 0 };
	char why[512], *t2 = NULL;
	size_t which, len2;
	int r = parsed(rv, oci_parse_index(text, len, &ix, why, sizeof(why)), why, err, errlen);
	if (r)
		return r;
	r = parsed(rv, oci_index_pick(&ix, tag, "index.json", &which, why, sizeof(why)), why, err,
	           errlen);
	const struct oci_desc *d = r ? NULL : &ix.m[which];
	if (d && oci_media_kind(d->media_type, NULL) == OCI_KIND_INDEX) {
		r = fetch_json(rv, d, "image index", &t2, &len2, err, errlen);
		if (!r)
			r = parsed(rv, oci_parse_index(t2, len2, &sub, why, sizeof(why)), why, err,
			           errlen);
		if (!r)
			r = parsed(
			    rv,
			    oci_index_pick(&sub, NULL, "the image index", &which, why, sizeof(why)),
			    why, err, errlen);
		if (!r && oci_media_kind(sub.m[which].media_type, NULL) != OCI_KIND_MANIFEST)
			r = errf(err, errlen, -EINVAL,
			         "%s: an image index inside an image index is not read", rv->what);
		d = r ? NULL : &sub.m[which];
	}
	if (d)
		r = resolve_manifest(rv, d, err, errlen);
	free(t2);
	oci_index_free(&sub);
	oci_index_free(&ix);
	return r;
}

/* oci:DIR[:TAG] */
static int open_layout(struct resolver *rv, const char *dir, const char *tag, char *err,
                       size_t errlen)
{
	char p[PATH_MAX + 32];
	struct stat st;
	size_t len;
	int e;
	snprintf(p, sizeof(p), "%s/index.json", dir);
	char *text = file_slurp(p, OCI_JSON_MAX, &len, &st, &e);
	if (!text)
		return errf(err, errlen, -e, "%s: index.json: %s", rv->what,
		            e == EFBIG ? "too large" : strerror(e));
	snprintf(p, sizeof(p), "%s/blobs/sha256", dir);
	rv->layout_fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = rv->layout_fd < 0
	            ? errf(err, errlen, -errno, "%s: blobs/sha256: %s", rv->what, strerror(errno))
	            : resolve_index(rv, text, len, tag, err, errlen);
	if (rv->layout_fd >= 0)
		close(rv->layout_fd);
	rv->layout_fd = -1;
	free(text);
	return r;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

/* A registry reference: skopeo pulls it into a fresh layout under
 * cache/tmp, read as oci:, then removed (its blobs are in the cache). */
static int open_registry(struct resolver *rv, const char *ref, int timeout_ms, char *err,
                         size_t errlen)
{
	char dir[sizeof(rv->c->dir) + 32];
	snprintf(dir, sizeof(dir), "%s/tmp/pull-XXXXXX", rv->c->dir);
	if (!mkdtemp(dir))
		return errf(err, errlen, -errno, "image cache: mkdtemp %s: %s", dir,
		            strerror(errno));
	int r = oci_pull(ref, dir, PULL_TAG, timeout_ms > 0 ? timeout_ms : IMAGE_PULL_TIMEOUT_MS,
	                 err, errlen);
	if (!r)
		r = open_layout(rv, dir, PULL_TAG, err, errlen);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return r;
}

static int open_archive(struct resolver *rv, const struct image_ref *ref, char *err, size_t errlen)
{
	char *text;
	size_t len;
	if (ref->kind == IMAGE_REF_DOCKER_ARCHIVE) {
		struct oci_desc d = { .media_type = "application/vnd.oci.image.manifest.v1+json" };
		int r = oci_archive_docker(rv->c, ref->path, d.digest, err, errlen);
		if (r)
			return r;
		(void)oci_cache_has(rv->c, d.digest, &d.size);
		return resolve_manifest(rv, &d, err, errlen);
	}
	int r = oci_archive_oci(rv->c, ref->path, &text, &len, err, errlen);
	if (r)
		return r;
	r = resolve_index(rv, text, len, ref->tag[0] ? ref->tag : NULL, err, errlen);
	free(text);
	return r;
}

int image_src_open(const char *cache, const char *ref, int timeout_ms, struct image_src *out,
                   char *err, size_t errlen)
{
	static const char *const names[] = { "oci", "oci-archive", "docker-archive", "registry" };
	struct image_ref *r = malloc(sizeof(*r));
	struct oci_cache c;
	char what[PATH_MAX + 32];
	memset(out, 0, sizeof(*out));
	if (!r)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int e = image_ref_parse(ref, r, err, errlen);
	if (!e)
		e = oci_cache_open(&c, cache, err, errlen);
	if (e) {
		free(r);
		return e;
	}
	snprintf(what, sizeof(what), "%s:%s", names[r->kind], r->path);
	struct resolver rv = { .c = &c, .layout_fd = -1, .what = what, .out = out };
	if (r->kind == IMAGE_REF_OCI)
		e = open_layout(&rv, r->path, r->tag[0] ? r->tag : NULL, err, errlen);
	else if (r->kind == IMAGE_REF_REGISTRY)
		e = open_registry(&rv, r->path, timeout_ms, err, errlen);
	else
		e = open_archive(&rv, r, err, errlen);
	out->blobs_read = c.blobs_read;
	oci_cache_close(&c);
	free(r);
	if (e)
		image_src_free(out);
	return e;
}
