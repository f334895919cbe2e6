/* Parsers of the JSON documents of container images (lib/image/oci_json.h).
 * The documents come from archives and registries we do not control: every
 * field is type- and bounds-checked, duplicate keys are refused, and what
 * is kept is copied out of jansson's tree before the tree goes. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "lib/image/oci_json.h"

#define REF_NAME_KEY "org.opencontainers.image.ref.name"

static const struct {
	const char *type;
	int kind;
	enum oci_comp comp;
} media[] = {
	{ "application/vnd.oci.image.index.v1+json", OCI_KIND_INDEX, OCI_COMP_NONE },
	{ "application/vnd.docker.distribution.manifest.list.v2+json", OCI_KIND_INDEX,
	  OCI_COMP_NONE },
	{ "application/vnd.oci.image.manifest.v1+json", OCI_KIND_MANIFEST, OCI_COMP_NONE },
	{ "application/vnd.docker.distribution.manifest.v2+json", OCI_KIND_MANIFEST,
	  OCI_COMP_NONE },
	{ "application/vnd.oci.image.config.v1+json", OCI_KIND_CONFIG, OCI_COMP_NONE },
	{ "application/vnd.docker.container.image.v1+json", OCI_KIND_CONFIG, OCI_COMP_NONE },
	{ "application/vnd.oci.image.layer.v1.tar", OCI_KIND_LAYER, OCI_COMP_NONE },
	{ "application/vnd.oci.image.layer.v1.tar+gzip", OCI_KIND_LAYER, OCI_COMP_GZIP },
	{ "application/vnd.oci.image.layer.v1.tar+zstd", OCI_KIND_LAYER, OCI_COMP_ZSTD },
	{ "application/vnd.docker.image.rootfs.diff.tar.gzip", OCI_KIND_LAYER, OCI_COMP_GZIP },
	{ "application/vnd.docker.image.rootfs.diff.tar.zstd", OCI_KIND_LAYER, OCI_COMP_ZSTD },
};

bool oci_digest_valid(const char *s)
{
	if (!s || strncmp(s, "sha256:", 7) != 0 || strlen(s) != OCI_DIGEST_LEN)
		return false;
	for (const char *p = s + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

int oci_media_kind(const char *mt, enum oci_comp *comp)
{
	for (size_t i = 0; mt && i < sizeof(media) / sizeof(media[0]); i++)
		if (!strcmp(mt, media[i].type)) {
			if (comp)
				*comp = media[i].comp;
			return media[i].kind;
		}
	return -1;
}

const char *oci_member_name(const char *name)
{
	if (!name || name[0] == '/')
		return NULL;
	while (name[0] == '.' && name[1] == '/') {
		name += 2;
		while (*name == '/')
			name++;
	}
	for (const char *p = name; *p;) {
		const char *e = strchrnul(p, '/');
		if (e - p == 2 && p[0] == '.' && p[1] == '.')
			return NULL;
		p = *e ? e + 1 : e;
	}
	return name;
}

/* A JSON document: an object or an array (@want), at most OCI_JSON_MAX. */
static json_t *load(const char *text, size_t len, bool array, const char *what, char *err,
                    size_t errlen)
{
	if (len > OCI_JSON_MAX) {
		errf(err, errlen, -EINVAL, "%s is larger than %d bytes", what, OCI_JSON_MAX);
		return NULL;
	}
	json_error_t je;
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o || (array ? !json_is_array(o) : !json_is_object(o))) {
		errf(err, errlen, -EINVAL, "%s: not a JSON %s (%s)", what,
		     array ? "array" : "object", o ? "another type" : je.text);
		json_decref(o);
		return NULL;
	}
	return o;
}

/* A string of 1 to max-1 bytes without NULs, or NULL. */
static const char *str_of(json_t *v, size_t max)
{
	const char *s = json_string_value(v);
	if (!s || json_string_length(v) == 0 || json_string_length(v) >= max ||
	    strlen(s) != json_string_length(v))
		return NULL;
	return s;
}

/* An optional platform name: "" when absent; -1 when malformed. */
static int platform_str(json_t *p, const char *key, char out[OCI_PLATFORM_MAX])
{
	json_t *v = json_object_get(p, key);
	out[0] = '\0';
	if (!v)
		return 0;
	const char *s = str_of(v, OCI_PLATFORM_MAX);
	if (!s)
		return -1;
	snprintf(out, OCI_PLATFORM_MAX, "%s", s);
	return 0;
}

/* One descriptor, of a kind in @kinds (a bit mask of 1 << enum oci_kind). */
static int parse_desc(json_t *j, unsigned kinds, const char *what, struct oci_desc *d, char *err,
                      size_t errlen)
{
	memset(d, 0, sizeof(*d));
	if (!json_is_object(j))
		return errf(err, errlen, -EINVAL, "%s: a descriptor must be an object", what);
	const char *mt = json_string_value(json_object_get(j, "mediaType"));
	const char *dg = json_string_value(json_object_get(j, "digest"));
	json_t *sz = json_object_get(j, "size");
	if (!mt || !str_of(json_object_get(j, "mediaType"), OCI_MEDIA_MAX))
		return errf(err, errlen, -EINVAL, "%s: a descriptor has no valid 'mediaType'",
		            what);
	int k = oci_media_kind(mt, NULL);
	if (k < 0 || !(kinds & (1u << k)))
		return errf(err, errlen, -EINVAL, "%s: media type '%.128s' is not supported here",
		            what, mt);
	if (!oci_digest_valid(dg))
		return errf(err, errlen, -EINVAL,
		            "%s: digest '%.80s' is not sha256:<64 hex digits>", what, dg ? dg : "");
	if (!json_is_integer(sz) || json_integer_value(sz) < 0 ||
	    (uint64_t)json_integer_value(sz) > OCI_BLOB_MAX)
		return errf(err, errlen, -EINVAL, "%s: blob %s: 'size' must be from 0 to %llu",
		            what, dg, (unsigned long long)OCI_BLOB_MAX);
	snprintf(d->media_type, sizeof(d->media_type), "%s", mt);
	snprintf(d->digest, sizeof(d->digest), "%s", dg);
	d->size = (uint64_t)json_integer_value(sz);
	json_t *p = json_object_get(j, "platform");
	if (p && (!json_is_object(p) || platform_str(p, "os", d->os) < 0 ||
	          platform_str(p, "architecture", d->arch) < 0))
		return errf(err, errlen, -EINVAL, "%s: blob %s: malformed 'platform'", what, dg);
	json_t *ann = json_object_get(j, "annotations");
	if (ann && !json_is_object(ann))
		return errf(err, errlen, -EINVAL, "%s: blob %s: 'annotations' must be an object",
		            what, dg);
	json_t *rn = json_object_get(ann, REF_NAME_KEY);
	if (rn) {
		const char *s = str_of(rn, OCI_NAME_MAX);
		if (!s)
			return errf(err, errlen, -EINVAL, "%s: blob %s: malformed '%s'", what, dg,
			            REF_NAME_KEY);
		if (!(d->ref_name = strdup(s)))
			return errf(err, errlen, -ENOMEM, "out of memory");
	}
	return 0;
}

static int schema_v2(json_t *o, const char *what, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, "schemaVersion");
	if (!json_is_integer(v) || json_integer_value(v) != 2)
		return errf(err, errlen, -EINVAL, "%s: 'schemaVersion' must be 2", what);
	return 0;
}

void oci_index_free(struct oci_index *ix)
{
	for (size_t i = 0; i < ix->n; i++)
		free(ix->m[i].ref_name);
	free(ix->m);
	memset(ix, 0, sizeof(*ix));
}

int oci_parse_index(const char *text, size_t len, struct oci_index *ix, char *err, size_t errlen)
{
	memset(ix, 0, sizeof(*ix));
	json_t *o = load(text, len, false, "image index", err, errlen);
	if (!o)
		return -EINVAL;
	int r = schema_v2(o, "image index", err, errlen);
	json_t *ms = json_object_get(o, "manifests");
	if (!r &&
	    (!json_is_array(ms) || json_array_size(ms) == 0 || json_array_size(ms) > OCI_INDEX_MAX))
		r = errf(err, errlen, -EINVAL,
		         "image index: 'manifests' must be an array of 1 to %d descriptors",
		         OCI_INDEX_MAX);
	if (!r && !(ix->m = calloc(json_array_size(ms), sizeof(ix->m[0]))))
		r = errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < json_array_size(ms); i++) {
		unsigned kinds = (1u << OCI_KIND_INDEX) | (1u << OCI_KIND_MANIFEST);
		r = parse_desc(json_array_get(ms, i), kinds, "image index", &ix->m[i], err, errlen);
		ix->n = i + 1; /* counted first, so that its ref name is freed */
	}
	json_decref(o);
	if (r)
		oci_index_free(ix);
	return r;
}

static bool is_linux_amd64(const struct oci_desc *d)
{
	return !strcmp(d->os, "linux") && !strcmp(d->arch, "amd64");
}

int oci_index_pick(const struct oci_index *ix, const char *tag, const char *what, size_t *which,
                   char *err, size_t errlen)
{
	size_t n = 0, n_amd = 0, last = 0, last_amd = 0;
	for (size_t i = 0; i < ix->n; i++) {
		if (tag && (!ix->m[i].ref_name || strcmp(ix->m[i].ref_name, tag)))
			continue;
		n++, last = i;
		if (is_linux_amd64(&ix->m[i]))
			n_amd++, last_amd = i;
	}
	if (n == 0)
		return errf(err, errlen, -ENOENT, "%s has no image tagged '%.128s'", what, tag);
	if (n == 1 || n_amd == 1) {
		*which = n == 1 ? last : last_amd;
		return 0;
	}
	if (tag)
		return errf(err, errlen, -EINVAL, "%s has %zu images tagged '%.128s'", what, n,
		            tag);
	return errf(err, errlen, -EINVAL, "%s has %zu images; name one with :TAG", what, n);
}

void oci_manifest_free(struct oci_manifest *m)
{
	free(m->config.ref_name);
	for (size_t i = 0; i < m->n_layers; i++)
		free(m->layers[i].ref_name);
	free(m->layers);
	memset(m, 0, sizeof(*m));
}

int oci_parse_manifest(const char *text, size_t len, const char *want_type, struct oci_manifest *m,
                       char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	json_t *o = load(text, len, false, "image manifest", err, errlen);
	if (!o)
		return -EINVAL;
	int r = schema_v2(o, "image manifest", err, errlen);
	const char *mt = json_string_value(json_object_get(o, "mediaType"));
	if (!r && json_object_get(o, "mediaType") &&
	    (!mt || (want_type && strcmp(mt, want_type) != 0)))
		r = errf(err, errlen, -EINVAL,
		         "image manifest: its mediaType '%.128s' is not its descriptor's '%.128s'",
		         mt ? mt : "", want_type ? want_type : "");
	if (!r)
		r = parse_desc(json_object_get(o, "config"), 1u << OCI_KIND_CONFIG,
		               "image manifest config", &m->config, err, errlen);
	json_t *ls = json_object_get(o, "layers");
	if (!r && (!json_is_array(ls) || json_array_size(ls) == 0 ||
	           json_array_size(ls) > OCI_LAYERS_MAX))
		r = errf(err, errlen, -EINVAL,
		         "image manifest: 'layers' must be an array of 1 to %d descriptors",
		         OCI_LAYERS_MAX);
	if (!r && !(m->layers = calloc(json_array_size(ls), sizeof(m->layers[0]))))
		r = errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < json_array_size(ls); i++) {
		char what[64];
		snprintf(what, sizeof(what), "image manifest layer %zu", i + 1);
		r = parse_desc(json_array_get(ls, i), 1u << OCI_KIND_LAYER, what, &m->layers[i],
		               err, errlen);
		m->n_layers = i + 1;
	}
	json_decref(o);
	if (r)
		oci_manifest_free(m);
	return r;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void image_config_free(struct image_config *c)
{
	strv_free(c->env, c->n_env);
	strv_free(c->entrypoint, c->n_entrypoint);
	strv_free(c->cmd, c->n_cmd);
	free(c->workdir);
	free(c->user);
	memset(c, 0, sizeof(*c));
}

/* An optional array of strings (null or absent: none); words may be "". */
static int strv_of(json_t *o, const char *key, size_t max, bool env, char ***out, size_t *n,
                   char *err, size_t errlen)
{
	json_t *a = json_object_get(o, key);
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > max)
		return errf(err, errlen, -EINVAL,
		            "image config: '%s' must be an array of at most %zu strings", key, max);
	if (json_array_size(a) == 0)
		return 0;
	if (!(*out = calloc(json_array_size(a), sizeof(char *))))
		return errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *v = json_array_get(a, i);
		const char *s = json_string_value(v);
		if (!s || json_string_length(v) >= OCI_STRING_MAX ||
		    strlen(s) != json_string_length(v) || (env && (s[0] == '=' || !strchr(s, '='))))
			return errf(err, errlen, -EINVAL, "image config: '%s' entry %zu is not %s",
			            key, i + 1, env ? "KEY=VALUE" : "a string without NULs");
		if (!((*out)[i] = strdup(s)))
			return errf(err, errlen, -ENOMEM, "out of memory");
		*n = i + 1;
	}
	return 0;
}

/* An optional string ("" is unset). */
static int opt_str(json_t *o, const char *key, char **out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
		return 0;
	const char *s = str_of(v, OCI_NAME_MAX);
	if (!s)
		return errf(err, errlen, -EINVAL,
		            "image config: '%s' must be a string of under %d bytes", key,
		            OCI_NAME_MAX);
	if (!(*out = strdup(s)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

static int platform_check(json_t *o, char *err, size_t errlen)
{
	const char *os = json_string_value(json_object_get(o, "os"));
	const char *arch = json_string_value(json_object_get(o, "architecture"));
	if (!os || strcmp(os, "linux") != 0)
		return errf(err, errlen, -EINVAL,
		            "image config: the image is for os '%.32s', not linux",
		            os ? os : "(none)");
	if (!arch || strcmp(arch, "amd64") != 0)
		return errf(err, errlen, -EINVAL,
		            "image config: the image is for architecture '%.32s', not amd64",
		            arch ? arch : "(none)");
	return 0;
}

static int diff_ids(json_t *o, char (**diff)[OCI_DIGEST_LEN + 1], size_t *n, char *err,
                    size_t errlen)
{
	json_t *rootfs = json_object_get(o, "rootfs");
	json_t *ids = json_object_get(rootfs, "diff_ids");
	if (!json_is_object(rootfs) || !json_is_array(ids) || json_array_size(ids) == 0 ||
	    json_array_size(ids) > OCI_LAYERS_MAX)
		return errf(err, errlen, -EINVAL,
		            "image config: 'rootfs.diff_ids' must be an array of 1 to %d digests",
		            OCI_LAYERS_MAX);
	if (!(*diff = calloc(json_array_size(ids), sizeof(**diff))))
		return errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < json_array_size(ids); i++) {
		const char *s = json_string_value(json_array_get(ids, i));
		if (!oci_digest_valid(s))
			return errf(err, errlen, -EINVAL,
			            "image config: diff_id %zu is not a digest", i + 1);
		snprintf((*diff)[i], sizeof((*diff)[i]), "%s", s);
	}
	*n = json_array_size(ids);
	return 0;
}

int oci_parse_config(const char *text, size_t len, struct image_config *c,
                     char (**diff)[OCI_DIGEST_LEN + 1], size_t *n_diff, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	if (diff)
		*diff = NULL, *n_diff = 0;
	json_t *o = load(text, len, false, "image config", err, errlen);
	if (!o)
		return -EINVAL;
	int r = platform_check(o, err, errlen);
	json_t *cc = json_object_get(o, "config");
	if (!r && cc && !json_is_null(cc) && !json_is_object(cc))
		r = errf(err, errlen, -EINVAL, "image config: 'config' must be an object");
	if (!r)
		r = strv_of(cc, "Env", OCI_ENV_MAX, true, &c->env, &c->n_env, err, errlen);
	if (!r)
		r = strv_of(cc, "Entrypoint", OCI_ARGV_MAX, false, &c->entrypoint, &c->n_entrypoint,
		            err, errlen);
	if (!r)
		r = strv_of(cc, "Cmd", OCI_ARGV_MAX, false, &c->cmd, &c->n_cmd, err, errlen);
	if (!r)
		r = opt_str(cc, "WorkingDir", &c->workdir, err, errlen);
	if (!r)
		r = opt_str(cc, "User", &c->user, err, errlen);
	if (!r && diff)
		r = diff_ids(o, diff, n_diff, err, errlen);
	json_decref(o);
	if (r) {
		image_config_free(c);
		if (diff) {
			free(*diff);
			*diff = NULL, *n_diff = 0;
		}
	}
	return r;
}

void docker_manifest_free(struct docker_manifest *d)
{
	free(d->config);
	strv_free(d->layers, d->n_layers);
	memset(d, 0, sizeof(*d));
}

/* A member path of manifest.json: relative, not climbing, "./" dropped. */
static int member_path(json_t *v, const char *what, char **out, char *err, size_t errlen)
{
	const char *s = str_of(v, OCI_NAME_MAX);
	const char *n = oci_member_name(s);
	if (!s || !n || !*n)
		return errf(err, errlen, -EINVAL,
		            "manifest.json: %s must be a relative path inside the archive", what);
	if (!(*out = strdup(n)))
		return errf(err, errlen, -ENOMEM, "out of memory");
	return 0;
}

int oci_parse_docker_manifest(const char *text, size_t len, struct docker_manifest *d, char *err,
                              size_t errlen)
{
	memset(d, 0, sizeof(*d));
	json_t *a = load(text, len, true, "manifest.json", err, errlen);
	if (!a)
		return -EINVAL;
	json_t *o = json_array_get(a, 0);
	json_t *ls = json_object_get(o, "Layers");
	int r = 0;
	if (json_array_size(a) != 1)
		r = errf(err, errlen, -EINVAL,
		         "manifest.json: the archive holds %zu images; only one is read",
		         json_array_size(a));
	else if (!json_is_object(o))
		r = errf(err, errlen, -EINVAL, "manifest.json: an image must be an object");
	else if (!json_is_array(ls) || json_array_size(ls) == 0 ||
	         json_array_size(ls) > OCI_LAYERS_MAX)
		r = errf(err, errlen, -EINVAL,
		         "manifest.json: 'Layers' must be an array of 1 to %d paths",
		         OCI_LAYERS_MAX);
	if (!r)
		r = member_path(json_object_get(o, "Config"), "'Config'", &d->config, err, errlen);
	if (!r && !(d->layers = calloc(json_array_size(ls), sizeof(char *))))
		r = errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; !r && i < json_array_size(ls); i++) {
		r = member_path(json_array_get(ls, i), "a layer", &d->layers[i], err, errlen);
		d->n_layers = i + 1;
	}
	json_decref(a);
	if (r)
		docker_manifest_free(d);
	return r;
}
