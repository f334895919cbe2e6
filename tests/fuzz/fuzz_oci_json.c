/* libFuzzer target: the JSON documents of container images as
 * lib/image/oci_json.c reads them: every parser on the same bytes (an
 * index, a manifest, a config, a docker-archive's manifest.json), the
 * index's pick, and member names.  A parser either fails with a one-line
 * message and nothing to free, or hands back checked values: valid
 * digests, media types of the kind asked for, bounded counts, Env entries
 * KEY=VALUE, member paths that neither start with '/' nor climb. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/image/oci_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(int r, const char *err)
{
	assert(r == -EINVAL || r == -ENOMEM);
	assert(err[0] && !strchr(err, '\n'));
}

static void check_desc(const struct oci_desc *d, unsigned kinds)
{
	int k = oci_media_kind(d->media_type, NULL);
	assert(k >= 0 && (kinds & (1u << k)));
	assert(oci_digest_valid(d->digest) && d->size <= OCI_BLOB_MAX);
	assert(!d->ref_name || (d->ref_name[0] && strlen(d->ref_name) < OCI_NAME_MAX));
}

static void index_(const char *buf, size_t size)
{
	char err[512] = "";
	struct oci_index ix;
	int r = oci_parse_index(buf, size, &ix, err, sizeof(err));
	if (r) {
		check_err(r, err);
		assert(ix.n == 0 && ix.m == NULL);
		return;
	}
	assert(ix.n >= 1 && ix.n <= OCI_INDEX_MAX);
	for (size_t i = 0; i < ix.n; i++)
		check_desc(&ix.m[i], (1u << OCI_KIND_INDEX) | (1u << OCI_KIND_MANIFEST));
	size_t which = SIZE_MAX;
	if (oci_index_pick(&ix, NULL, "index", &which, err, sizeof(err)) == 0)
		assert(which < ix.n);
	if (ix.m[0].ref_name &&
	    oci_index_pick(&ix, ix.m[0].ref_name, "index", &which, err, sizeof(err)) == 0)
		assert(!strcmp(ix.m[which].ref_name, ix.m[0].ref_name));
	oci_index_free(&ix);
}

static void manifest(const char *buf, size_t size)
{
	char err[512] = "";
	struct oci_manifest m;
	int r = oci_parse_manifest(buf, size, NULL, &m, err, sizeof(err));
	if (r) {
		check_err(r, err);
		assert(m.n_layers == 0 && m.layers == NULL && !m.config.ref_name);
		return;
	}
	check_desc(&m.config, 1u << OCI_KIND_CONFIG);
	assert(m.n_layers >= 1 && m.n_layers <= OCI_LAYERS_MAX);
	for (size_t i = 0; i < m.n_layers; i++)
		check_desc(&m.layers[i], 1u << OCI_KIND_LAYER);
	oci_manifest_free(&m);
}

static void config(const char *buf, size_t size)
{
	char err[512] = "";
	struct image_config c;
	char(*diff)[OCI_DIGEST_LEN + 1] = NULL;
	size_t nd = 0;
	int r = oci_parse_config(buf, size, &c, &diff, &nd, err, sizeof(err));
	if (r) {
		check_err(r, err);
		assert(!c.env && !c.cmd && !c.entrypoint && !c.workdir && !c.user && !diff);
	} else {
		assert(nd >= 1 && nd <= OCI_LAYERS_MAX);
		for (size_t i = 0; i < nd; i++)
			assert(oci_digest_valid(diff[i]));
	}
	assert(c.n_env <= OCI_ENV_MAX && c.n_cmd <= OCI_ARGV_MAX);
	for (size_t i = 0; i < c.n_env; i++)
		assert(c.env[i][0] != '=' && strchr(c.env[i], '='));
	free(diff);
	image_config_free(&c);
	/* Without diff_ids, a config that passed still passes. */
	if (r == 0) {
		assert(oci_parse_config(buf, size, &c, NULL, NULL, err, sizeof(err)) == 0);
		image_config_free(&c);
	}
}

static void docker(const char *buf, size_t size)
{
	char err[512] = "";
	struct docker_manifest d;
	int r = oci_parse_docker_manifest(buf, size, &d, err, sizeof(err));
	if (r) {
		check_err(r, err);
		assert(!d.config && !d.layers && d.n_layers == 0);
		return;
	}
	assert(oci_member_name(d.config) == d.config);
	assert(d.n_layers >= 1 && d.n_layers <= OCI_LAYERS_MAX);
	for (size_t i = 0; i < d.n_layers; i++)
		assert(d.layers[i][0] && oci_member_name(d.layers[i]) == d.layers[i]);
	docker_manifest_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	index_(buf, size);
	manifest(buf, size);
	config(buf, size);
	docker(buf, size);
	if (size < 4096) {
		char name[4096];
		memcpy(name, data, size);
		name[size] = '\0';
		const char *n = oci_member_name(name);
		assert(!n || (n[0] != '/' && !strstr(n, "/../") && strncmp(n, "../", 3) &&
		              strcmp(n, "..")));
	}
	return 0;
}
