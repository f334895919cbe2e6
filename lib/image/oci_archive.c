/* Image archives into the blob cache (lib/image/oci_archive.h).  Each pass
 * streams the archive once (any tar flavour, any compression libarchive
 * reads); members not wanted are skipped. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "lib/image/oci_archive.h"

#define BLOB_PREFIX "blobs/sha256/"

/* Called for each member (@name: oci_member_name of its path, NULL when
 * absolute or climbing): 0 goes on, 1 stops, < 0 fails the pass. */
typedef int (*member_fn)(void *arg, struct archive *a, struct archive_entry *e, const char *name,
                         char *err, size_t errlen);

static int each_member(const char *path, const char *what, member_fn fn, void *arg, char *err,
                       size_t errlen)
{
	struct archive *a = archive_read_new();
	if (!a)
		return errf(err, errlen, -ENOMEM, "out of memory");
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	int r = 0;
	if (archive_read_open_filename(a, path, 64 << 10) != ARCHIVE_OK) {
		r = errf(err, errlen, -EINVAL, "%s %s: %s", what, path, archive_error_string(a));
		goto out;
	}
	struct archive_entry *e;
	for (size_t n = 0;; n++) {
		int h = archive_read_next_header(a, &e);
		if (h == ARCHIVE_EOF)
			break;
		if (h != ARCHIVE_OK && h != ARCHIVE_WARN) {
			r = errf(err, errlen, -EINVAL, "%s %s: %s", what, path,
			         archive_error_string(a));
			break;
		}
		if (n >= OCI_ARCHIVE_MEMBERS_MAX) {
			r = errf(err, errlen, -EINVAL, "%s %s: more than %d members", what, path,
			         OCI_ARCHIVE_MEMBERS_MAX);
			break;
		}
		if ((r = fn(arg, a, e, oci_member_name(archive_entry_pathname(e)), err, errlen)))
			break;
	}
out:
	archive_read_free(a);
	return r < 0 ? r : 0;
}

static ssize_t member_read(void *arg, void *buf, size_t n, char *err, size_t errlen)
{
	la_ssize_t r = archive_read_data(arg, buf, n);
	if (r < 0)
		return errf(err, errlen, -EIO, "reading the archive: %s",
		            archive_error_string(arg));
	return r;
}

/* A small member in memory (NUL-ended), at most OCI_JSON_MAX bytes. */
static int member_slurp(struct archive *a, struct archive_entry *e, const char *name, char **out,
                        size_t *len, char *err, size_t errlen)
{
	if (*out)
		return errf(err, errlen, -EINVAL, "member '%s' appears twice", name);
	if (archive_entry_filetype(e) != AE_IFREG || archive_entry_size(e) < 0 ||
	    archive_entry_size(e) > OCI_JSON_MAX)
		return errf(err, errlen, -EINVAL, "member '%s' is not a file of at most %d bytes",
		            name, OCI_JSON_MAX);
	size_t n = (size_t)archive_entry_size(e);
	if (!(*out = malloc(n + 1)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	size_t got = 0;
	while (got < n) {
		ssize_t r = member_read(a, *out + got, n - got, err, errlen);
		if (r <= 0) {
			free(*out);
			*out = NULL;
			return r < 0 ? (int)r
			             : errf(err, errlen, -EINVAL, "member '%s' is cut short", name);
		}
		got += (size_t)r;
	}
	(*out)[n] = '\0';
	*len = n;
	return 0;
}

/* The digest a member's name gives (blobs/sha256/<hex>, or <hex>.json as
 * docker save names configs) into @dg; false when it gives none. */
static bool name_digest(const char *name, bool json, char dg[OCI_DIGEST_LEN + 1])
{
	size_t n = name ? strlen(name) : 0, pre = strlen(BLOB_PREFIX);
	if (n == pre + 64 && !strncmp(name, BLOB_PREFIX, pre))
		snprintf(dg, OCI_DIGEST_LEN + 1, "sha256:%s", name + pre);
	else if (json && n == 64 + 5 && !strcmp(name + 64, ".json"))
		snprintf(dg, OCI_DIGEST_LEN + 1, "sha256:%.64s", name);
	else
		return false;
	return oci_digest_valid(dg);
}

/* A member into the cache, named by @what; @want (may be NULL) its
 * digest.  Cached already: skipped unread. */
static int member_put(struct oci_cache *c, struct archive *a, struct archive_entry *e,
                      const char *name, const char *want, char got[OCI_DIGEST_LEN + 1], char *err,
                      size_t errlen)
{
	if (archive_entry_filetype(e) != AE_IFREG)
		return errf(err, errlen, -EINVAL, "member '%.200s' is not a regular file", name);
	if (want && oci_cache_has(c, want, NULL)) {
		if (got)
			snprintf(got, OCI_DIGEST_LEN + 1, "%s", want);
		return 0;
	}
	char what[256];
	snprintf(what, sizeof(what), "member '%.200s'", name);
	return oci_cache_put(c, member_read, a, want, -1, what, got, err, errlen);
}

struct oci_pass {
	struct oci_cache *c;
	char *index;
	size_t len;
};

static int oci_member(void *arg, struct archive *a, struct archive_entry *e, const char *name,
                      char *err, size_t errlen)
{
	struct oci_pass *p = arg;
	char dg[OCI_DIGEST_LEN + 1];
	if (name && !strcmp(name, "index.json"))
		return member_slurp(a, e, name, &p->index, &p->len, err, errlen);
	if (name_digest(name, false, dg))
		return member_put(p->c, a, e, name, dg, NULL, err, errlen);
	return 0;
}

int oci_archive_oci(struct oci_cache *c, const char *path, char **index, size_t *len, char *err,
                    size_t errlen)
{
	struct oci_pass p = { .c = c };
	char e2[512] = "";
	int r = each_member(path, "oci-archive", oci_member, &p, e2, sizeof(e2));
	if (r == 0 && !p.index)
		r = errf(e2, sizeof(e2), -EINVAL, "no index.json: not an OCI layout");
	if (r) {
		free(p.index);
		return errf(err, errlen, r, "oci-archive %s: %s", path, e2);
	}
	*index = p.index;
	*len = p.len;
	return 0;
}

/* ---- docker-archive ---- */

struct docker_pass {
	struct oci_cache *c;
	struct docker_manifest *m;
	char *manifest;                   /* pass 1: manifest.json */
	size_t len;                       /* its length */
	const char *want;                 /* pass 2: the config's digest by its name, or NULL */
	char config[OCI_DIGEST_LEN + 1];  /* pass 2: the config's digest, "" until read */
	char (*diff)[OCI_DIGEST_LEN + 1]; /* pass 3: the layers' digests */
	char **alias;                     /* pass 3: where a layer member that is a link points */
	bool aliased;                     /* pass 3 found a link */
};

static int docker_manifest_member(void *arg, struct archive *a, struct archive_entry *e,
                                  const char *name, char *err, size_t errlen)
{
	struct docker_pass *p = arg;
	if (name && !strcmp(name, "manifest.json"))
		return member_slurp(a, e, name, &p->manifest, &p->len, err, errlen);
	return 0;
}

static int docker_config_member(void *arg, struct archive *a, struct archive_entry *e,
                                const char *name, char *err, size_t errlen)
{
	struct docker_pass *p = arg;
	if (!name || strcmp(name, p->m->config) != 0)
		return 0;
	int r = member_put(p->c, a, e, name, p->want, p->config, err, errlen);
	return r < 0 ? r : 1;
}

/* The member a link member @name points to (a hard link's target is
 * from the archive's root, a symlink's from @name's folder), resolved
 * lexically; NULL when it leaves the archive or memory runs out. */
static char *link_member(const char *name, struct archive_entry *e)
{
	const char *hard = archive_entry_hardlink(e), *sym = archive_entry_symlink(e);
	char buf[2 * OCI_NAME_MAX + 2];
	const char *slash = strrchr(name, '/');
	if (hard)
		snprintf(buf, sizeof(buf), "%s", hard);
	else if (sym && sym[0] != '/')
		snprintf(buf, sizeof(buf), "%.*s%s", slash ? (int)(slash - name + 1) : 0, name,
		         sym);
	else
		return NULL;
	/* Drop "." and "" components, and ".." with the one before it. */
	char out[sizeof(buf)] = "", *save = NULL;
	size_t n = 0;
	for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			if (n == 0)
				return NULL;
			char *up = strrchr(out, '/');
			n = up ? (size_t)(up - out) : 0;
			out[n] = '\0';
			continue;
		}
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", n ? "/" : "", c);
		if (n >= sizeof(out))
			return NULL;
	}
	return n ? strdup(out) : NULL;
}

static int docker_layer_member(void *arg, struct archive *a, struct archive_entry *e,
                               const char *name, char *err, size_t errlen)
{
	struct docker_pass *p = arg;
	bool link = archive_entry_hardlink(e) || archive_entry_filetype(e) == AE_IFLNK;
	for (size_t i = 0; name && i < p->m->n_layers; i++) {
		bool by_alias = p->alias[i] && !strcmp(name, p->alias[i]);
		if ((!by_alias && strcmp(name, p->m->layers[i]) != 0) ||
		    oci_cache_has(p->c, p->diff[i], NULL))
			continue;
		if (link && !by_alias && !p->alias[i]) { /* followed once, in the next pass */
			if (!(p->alias[i] = link_member(name, e)))
				return errf(err, errlen, -EINVAL,
				            "layer %zu: member '%.200s' links out of the archive",
				            i + 1, name);
			p->aliased = true;
			continue;
		}
		char why[512] = "";
		int r = member_put(p->c, a, e, name, p->diff[i], NULL, why, sizeof(why));
		if (r < 0)
			return errf(
			    err, errlen, r,
			    "layer %zu: %s (docker-archive layers are the uncompressed tars "
			    "the config's diff_ids name)",
			    i + 1, why);
	}
	return 0;
}

/* The OCI manifest of the image read, into the cache. */
static int docker_oci_manifest(struct docker_pass *p, char out[OCI_DIGEST_LEN + 1], char *err,
                               size_t errlen)
{
	uint64_t size = 0;
	json_t *ls = json_array();
	json_t *m = json_pack("{s:i, s:s, s:o}", "schemaVersion", 2, "mediaType",
	                      "application/vnd.oci.image.manifest.v1+json", "layers", ls);
	(void)oci_cache_has(p->c, p->config, &size);
	json_t *cfg =
	    json_pack("{s:s, s:s, s:I}", "mediaType", "application/vnd.oci.image.config.v1+json",
	              "digest", p->config, "size", (json_int_t)size);
	int r = m && cfg && !json_object_set_new(m, "config", cfg) ? 0 : -ENOMEM;
	if (!m)
		json_decref(cfg);
	for (size_t i = 0; !r && i < p->m->n_layers; i++) {
		(void)oci_cache_has(p->c, p->diff[i], &size);
		json_t *l = json_pack("{s:s, s:s, s:I}", "mediaType",
		                      "application/vnd.oci.image.layer.v1.tar", "digest",
		                      p->diff[i], "size", (json_int_t)size);
		r = l && !json_array_append_new(ls, l) ? 0 : -ENOMEM;
	}
	char *text = r ? NULL : json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(m);
	if (!text)
		return errf(err, errlen, -ENOMEM, "out of memory");
	r = oci_cache_put_mem(p->c, text, strlen(text), "the manifest made", out, err, errlen);
	free(text);
	return r;
}

/* Passes 2 and 3: the config, then the layers not yet cached. */
static int docker_blobs(struct docker_pass *p, const char *path, char *err, size_t errlen)
{
	char want[OCI_DIGEST_LEN + 1];
	p->want = name_digest(p->m->config, true, want) ? want : NULL;
	if (p->want && oci_cache_has(p->c, p->want, NULL))
		snprintf(p->config, sizeof(p->config), "%s", want);
	int r = 0;
	if (!p->config[0] &&
	    (r = each_member(path, "docker-archive", docker_config_member, p, err, errlen)) < 0)
		return r;
	if (!p->config[0])
		return errf(err, errlen, -ENOENT, "the config '%.200s' is missing", p->m->config);
	char *text;
	size_t len, n_diff;
	struct image_config cfg;
	if ((r = oci_cache_read(p->c, p->config, OCI_JSON_MAX, "config", &text, &len, err,
	                        errlen)) < 0)
		return r;
	r = oci_parse_config(text, len, &cfg, &p->diff, &n_diff, err, errlen);
	free(text);
	if (r)
		return r;
	image_config_free(&cfg);
	if (n_diff != p->m->n_layers)
		return errf(err, errlen, -EINVAL, "%zu layers but the config has %zu diff_ids",
		            p->m->n_layers, n_diff);
	bool need = false;
	for (size_t i = 0; i < n_diff; i++)
		need = need || !oci_cache_has(p->c, p->diff[i], NULL);
	if (need && !(p->alias = calloc(n_diff, sizeof(char *))))
		return errf(err, errlen, -ENOMEM, "out of memory");
	/* A second pass reads what links of the first pointed to. */
	for (int pass = 0; need && pass < 2 && (pass == 0 || p->aliased); pass++)
		if ((r = each_member(path, "docker-archive", docker_layer_member, p, err, errlen)) <
		    0)
			return r;
	for (size_t i = 0; i < n_diff; i++)
		if (!oci_cache_has(p->c, p->diff[i], NULL))
			return errf(err, errlen, -ENOENT, "layer %zu '%.200s' (%s) is missing",
			            i + 1, p->m->layers[i], p->diff[i]);
	return 0;
}

int oci_archive_docker(struct oci_cache *c, const char *path, char manifest[OCI_DIGEST_LEN + 1],
                       char *err, size_t errlen)
{
	struct docker_manifest m = { 0 };
	struct docker_pass p = { .c = c, .m = &m };
	char e2[768] = "";
	int r = each_member(path, "docker-archive", docker_manifest_member, &p, e2, sizeof(e2));
	if (r == 0 && !p.manifest)
		r = errf(e2, sizeof(e2), -EINVAL, "no manifest.json: not a docker-archive");
	if (r == 0)
		r = oci_parse_docker_manifest(p.manifest, p.len, &m, e2, sizeof(e2));
	if (r == 0)
		r = docker_blobs(&p, path, e2, sizeof(e2));
	if (r == 0)
		r = docker_oci_manifest(&p, manifest, e2, sizeof(e2));
	free(p.manifest);
	for (size_t i = 0; p.alias && i < m.n_layers; i++)
		free(p.alias[i]);
	free(p.alias);
	free(p.diff);
	docker_manifest_free(&m);
	if (r)
		return errf(err, errlen, r, "docker-archive %s: %s", path, e2);
	return 0;
}
