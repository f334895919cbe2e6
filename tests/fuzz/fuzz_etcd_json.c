/* libFuzzer target: etcd's JSON gateway answers as coved's cluster mode
 * reads them (daemon/cluster/etcd_json.c): every parser on the same bytes.
 * A parser either fails with a message and nothing to free, or hands back
 * checked values: kvs with keys, NUL-terminated copies, revisions >= 0.
 * Base64 that decodes is the one spelling of its bytes. */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cluster/etcd_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_kvs(const struct etcd_kvs *k, int r, const char *err)
{
	if (r) {
		assert(r == -EPROTO || r == -ENOMEM);
		assert(err[0] && !strchr(err, '\n'));
		assert(k->n == 0 && k->kv == NULL);
		return;
	}
	assert(k->n <= ETCD_KVS_MAX && k->revision >= 0);
	for (size_t i = 0; i < k->n; i++) {
		const struct etcd_kv *kv = &k->kv[i];
		assert(kv->key_len > 0 && kv->key[kv->key_len] == '\0');
		assert(kv->value[kv->value_len] == '\0');
		assert(kv->create_rev >= 0 && kv->mod_rev >= 0 && kv->version >= 0 &&
		       kv->lease >= 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	char err[512] = "";
	struct etcd_kvs k;
	int r = etcd_json_parse_range(buf, size, &k, err, sizeof(err));
	check_kvs(&k, r, err);
	etcd_kvs_free(&k);

	bool won = true;
	err[0] = '\0';
	r = etcd_json_parse_txn(buf, size, &won, &k, err, sizeof(err));
	check_kvs(&k, r, err);
	assert(!r || !won);
	etcd_kvs_free(&k);
	(void)etcd_json_parse_txn(buf, size, &won, NULL, err, sizeof(err));

	int64_t id = 0, ttl = 0, rev = 0;
	if (etcd_json_parse_grant(buf, size, &id, &ttl, err, sizeof(err)) == 0)
		assert(id > 0 && ttl > 0);
	if (etcd_json_parse_keepalive(buf, size, &ttl, err, sizeof(err)) == 0)
		assert(ttl > 0);
	if (etcd_json_parse_header(buf, size, &rev, err, sizeof(err)) == 0)
		assert(rev >= 0);
	err[0] = '\0';
	r = etcd_json_parse_error(buf, size, err, sizeof(err));
	assert(r < 0 && err[0] && !strchr(err, '\n'));

	char *d;
	size_t n;
	if (etcd_json_b64_decode(buf, size, &d, &n) == 0) {
		char *e = etcd_json_b64_encode(d, n);
		assert(e && strlen(e) == size && memcmp(e, buf, size) == 0);
		free(e);
		free(d);
	}
	return 0;
}
