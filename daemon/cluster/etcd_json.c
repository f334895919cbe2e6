/* etcd's v3 JSON gateway bodies: requests built, answers checked (etcd_json.h). */
#include "daemon/cluster/etcd_json.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/json_body.h"
#include "errf.h"

/* The deepest answer read: a txn's kvs sit six levels down. */
#define ANSWER_DEPTH 16

static const char b64_abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *etcd_json_b64_encode(const void *p, size_t n)
{
	const unsigned char *s = p;
	if (n > SIZE_MAX / 2)
		return NULL;
	char *o = malloc((n + 2) / 3 * 4 + 1);
	if (!o)
		return NULL;
	size_t j = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < n)
			v |= s[i + 2];
		o[j++] = b64_abc[v >> 18 & 63];
		o[j++] = b64_abc[v >> 12 & 63];
		o[j++] = i + 1 < n ? b64_abc[v >> 6 & 63] : '=';
		o[j++] = i + 2 < n ? b64_abc[v & 63] : '=';
	}
	o[j] = '\0';
	return o;
}

static int b64_val(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

int etcd_json_b64_decode(const char *s, size_t n, char **out, size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	if (n % 4)
		return -EPROTO;
	size_t pad = 0;
	if (n && s[n - 1] == '=')
		pad = n > 1 && s[n - 2] == '=' ? 2 : 1;
	size_t olen = n / 4 * 3 - pad;
	char *o = malloc(olen + 1);
	if (!o)
		return -ENOMEM;
	size_t j = 0;
	for (size_t i = 0; i < n; i += 4) {
		bool last = i + 4 == n;
		uint32_t w = 0;
		for (size_t k = 0; k < 4; k++) {
			int v = last && k >= 4 - pad ? 0 : b64_val((unsigned char)s[i + k]);
			if (v < 0)
				goto bad;
			w = w << 6 | (uint32_t)v;
		}
		size_t bytes = last ? 3 - pad : 3;
		/* The bits under the padding must be zero: one spelling per value. */
		if ((bytes == 1 && (w & 0xffff)) || (bytes == 2 && (w & 0xff)))
			goto bad;
		o[j++] = (char)(w >> 16);
		if (bytes > 1)
			o[j++] = (char)(w >> 8);
		if (bytes > 2)
			o[j++] = (char)w;
	}
	o[j] = '\0';
	*out = o;
	*outlen = j;
	return 0;
bad:
	free(o);
	return -EPROTO;
}

void etcd_kvs_free(struct etcd_kvs *k)
{
	for (size_t i = 0; i < k->n; i++) {
		free(k->kv[i].key);
		free(k->kv[i].value);
	}
	free(k->kv);
	memset(k, 0, sizeof(*k));
}

/* ---- answers --------------------------------------------------------- */

static json_t *load(const char *buf, size_t len, size_t flags, char *err, size_t errlen)
{
	if (len > ETCD_ANSWER_MAX) {
		errf(err, errlen, -EPROTO, "answer of %zu bytes is over the %u byte limit", len,
		     ETCD_ANSWER_MAX);
		return NULL;
	}
	if (!coved_json_depth_ok(buf, len, ANSWER_DEPTH)) {
		errf(err, errlen, -EPROTO, "answer nests deeper than %d levels", ANSWER_DEPTH);
		return NULL;
	}
	json_error_t je;
	json_t *o = json_loadb(buf, len, flags | JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		errf(err, errlen, -EPROTO, "answer is not JSON: %s (at byte %d)", je.text,
		     je.position);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		errf(err, errlen, -EPROTO, "answer is not a JSON object");
		return NULL;
	}
	return o;
}

/* A decimal int64 as the gateway writes it: -?[0-9]{1,19}, no overflow. */
static int str_i64(const char *s, int64_t *v)
{
	const char *p = s + (*s == '-');
	size_t nd = strspn(p, "0123456789");
	if (nd == 0 || nd > 19 || p[nd] != '\0')
		return -EPROTO;
	errno = 0;
	long long n = strtoll(s, NULL, 10);
	if (errno)
		return -EPROTO;
	*v = n;
	return 0;
}

/* o's int64 field name: a JSON string or integer, 0 when absent or null
 * (the gateway leaves zero values out); below min is malformed. */
static int get_i64(json_t *o, const char *name, int64_t min, int64_t *v, char *err, size_t errlen)
{
	json_t *x = json_object_get(o, name);
	int64_t n = 0;
	*v = 0;
	if (!x || json_is_null(x))
		n = 0;
	else if (json_is_integer(x))
		n = json_integer_value(x);
	else if (!json_is_string(x) || str_i64(json_string_value(x), &n))
		return errf(err, errlen, -EPROTO, "field \"%s\" is not an int64", name);
	if (n < min)
		return errf(err, errlen, -EPROTO, "field \"%s\" is %" PRId64 ", below %" PRId64,
		            name, n, min);
	*v = n;
	return 0;
}

/* o's bool field name: false when absent. */
static int get_bool(json_t *o, const char *name, bool *v, char *err, size_t errlen)
{
	json_t *x = json_object_get(o, name);
	*v = false;
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_boolean(x))
		return errf(err, errlen, -EPROTO, "field \"%s\" is not a bool", name);
	*v = json_is_true(x);
	return 0;
}

/* The answer header's revision; every etcd answer has a header. */
static int header_rev(json_t *o, int64_t *rev, char *err, size_t errlen)
{
	json_t *h = json_object_get(o, "header");
	if (!json_is_object(h))
		return errf(err, errlen, -EPROTO, "answer has no header");
	return get_i64(h, "revision", 0, rev, err, errlen);
}

/* A base64 string field decoded; absent (or null) is empty unless required. */
static int get_b64(json_t *o, const char *name, bool required, char **out, size_t *len, char *err,
                   size_t errlen)
{
	json_t *x = json_object_get(o, name);
	*out = NULL;
	if (!x || json_is_null(x)) {
		if (required)
			return errf(err, errlen, -EPROTO, "a kv has no \"%s\"", name);
		x = NULL;
	} else if (!json_is_string(x)) {
		return errf(err, errlen, -EPROTO, "field \"%s\" is not a string", name);
	}
	int r = etcd_json_b64_decode(x ? json_string_value(x) : "", x ? json_string_length(x) : 0,
	                             out, len);
	if (r == -EPROTO)
		return errf(err, errlen, -EPROTO, "field \"%s\" is not base64", name);
	if (r < 0)
		return errf(err, errlen, r, "out of memory decoding \"%s\"", name);
	return 0;
}

static int parse_kv(json_t *j, struct etcd_kv *kv, char *err, size_t errlen)
{
	memset(kv, 0, sizeof(*kv));
	if (!json_is_object(j))
		return errf(err, errlen, -EPROTO, "a kv is not an object");
	int r = get_i64(j, "create_revision", 0, &kv->create_rev, err, errlen);
	if (!r)
		r = get_i64(j, "mod_revision", 0, &kv->mod_rev, err, errlen);
	if (!r)
		r = get_i64(j, "version", 0, &kv->version, err, errlen);
	if (!r)
		r = get_i64(j, "lease", 0, &kv->lease, err, errlen);
	if (!r)
		r = get_b64(j, "key", true, &kv->key, &kv->key_len, err, errlen);
	if (!r && kv->key_len == 0)
		r = errf(err, errlen, -EPROTO, "a kv has an empty key");
	if (!r)
		r = get_b64(j, "value", false, &kv->value, &kv->value_len, err, errlen);
	if (r) {
		free(kv->key);
		free(kv->value);
		memset(kv, 0, sizeof(*kv));
	}
	return r;
}

/* o's "kvs" appended to out; the listing must be whole ("count" kvs, no
 * "more"), as every range coved sends has no limit. */
static int parse_kvs(json_t *o, struct etcd_kvs *out, char *err, size_t errlen)
{
	json_t *a = json_object_get(o, "kvs");
	if (a && !json_is_null(a) && !json_is_array(a))
		return errf(err, errlen, -EPROTO, "field \"kvs\" is not an array");
	size_t n = json_array_size(a);
	int64_t count;
	bool more;
	int r = get_i64(o, "count", 0, &count, err, errlen);
	if (!r)
		r = get_bool(o, "more", &more, err, errlen);
	if (r)
		return r;
	if (more || (uint64_t)count != n)
		return errf(err, errlen, -EPROTO, "a range lists %zu of %" PRId64 " kvs%s", n,
		            count, more ? " (more)" : "");
	if (n > ETCD_KVS_MAX - out->n)
		return errf(err, errlen, -EPROTO, "answer holds over %u kvs", ETCD_KVS_MAX);
	if (n == 0)
		return 0;
	struct etcd_kv *kv = realloc(out->kv, (out->n + n) * sizeof(*kv));
	if (!kv)
		return errf(err, errlen, -ENOMEM, "out of memory for %zu kvs", out->n + n);
	out->kv = kv;
	for (size_t i = 0; i < n; i++) {
		r = parse_kv(json_array_get(a, i), &out->kv[out->n], err, errlen);
		if (r)
			return r;
		out->n++;
	}
	return 0;
}

int etcd_json_parse_header(const char *buf, size_t len, int64_t *revision, char *err, size_t errlen)
{
	int64_t rev;
	json_t *o = load(buf, len, 0, err, errlen);
	if (!o)
		return -EPROTO;
	int r = header_rev(o, &rev, err, errlen);
	json_decref(o);
	if (!r && revision)
		*revision = rev;
	return r;
}

int etcd_json_parse_range(const char *buf, size_t len, struct etcd_kvs *out, char *err,
                          size_t errlen)
{
	memset(out, 0, sizeof(*out));
	json_t *o = load(buf, len, 0, err, errlen);
	if (!o)
		return -EPROTO;
	int r = header_rev(o, &out->revision, err, errlen);
	if (!r)
		r = parse_kvs(o, out, err, errlen);
	json_decref(o);
	if (r)
		etcd_kvs_free(out);
	return r;
}

int etcd_json_parse_grant(const char *buf, size_t len, int64_t *id, int64_t *ttl, char *err,
                          size_t errlen)
{
	int64_t rev;
	json_t *o = load(buf, len, 0, err, errlen);
	if (!o)
		return -EPROTO;
	json_t *e = json_object_get(o, "error");
	int r = header_rev(o, &rev, err, errlen);
	if (!r && json_is_string(e) && json_string_length(e))
		r = errf(err, errlen, -EIO, "lease grant failed: %s", json_string_value(e));
	if (!r)
		r = get_i64(o, "ID", 1, id, err, errlen);
	if (!r)
		r = get_i64(o, "TTL", 1, ttl, err, errlen);
	json_decref(o);
	return r;
}

/* grpc-gateway's error: {"error":"msg","code":N} as an answer, or
 * {"error":{"grpc_code":N,"message":"msg"}} as a stream's message. */
static int error_of(json_t *o, char *err, size_t errlen)
{
	json_t *e = json_object_get(o, "error"), *c, *m;
	if (json_is_object(e)) {
		c = json_object_get(e, "grpc_code");
		m = json_object_get(e, "message");
	} else if (json_is_string(e)) {
		c = json_object_get(o, "code");
		m = json_object_get(o, "message");
		if (!json_is_string(m))
			m = e;
	} else {
		return errf(err, errlen, -EPROTO, "answer is no gateway error");
	}
	if (!json_is_integer(c) || json_integer_value(c) < 0 || json_integer_value(c) > 16)
		return errf(err, errlen, -EPROTO, "gateway error without a gRPC code");
	static const int to_errno[17] = {
		[3] = -EINVAL,  [4] = -ETIMEDOUT,     [5] = -ENOENT,
		[7] = -EACCES,  [8] = -ENOSPC,        [9] = -EINVAL,
		[11] = -ERANGE, [14] = -EHOSTUNREACH, [16] = -EACCES,
	};
	int code = (int)json_integer_value(c);
	int r = to_errno[code] ? to_errno[code] : -EIO;
	return errf(err, errlen, r, "%s (gRPC code %d)",
	            json_is_string(m) ? json_string_value(m) : "no message", code);
}

int etcd_json_parse_error(const char *buf, size_t len, char *err, size_t errlen)
{
	json_t *o = load(buf, len, 0, err, errlen);
	if (!o)
		return -EPROTO;
	int r = error_of(o, err, errlen);
	json_decref(o);
	return r;
}

int etcd_json_parse_keepalive(const char *buf, size_t len, int64_t *ttl, char *err, size_t errlen)
{
	int64_t rev, id;
	/* A stream: the first message counts, whatever follows it. */
	json_t *o = load(buf, len, JSON_DISABLE_EOF_CHECK, err, errlen), *res;
	if (!o)
		return -EPROTO;
	int r;
	if (json_object_get(o, "error")) {
		r = error_of(o, err, errlen);
	} else if (!json_is_object(res = json_object_get(o, "result"))) {
		r = errf(err, errlen, -EPROTO, "keepalive answer has no result");
	} else {
		r = header_rev(res, &rev, err, errlen);
		if (!r)
			r = get_i64(res, "ID", 1, &id, err, errlen);
		if (!r)
			r = get_i64(res, "TTL", INT64_MIN, ttl, err, errlen);
		if (!r && *ttl <= 0)
			r = errf(err, errlen, -ENOENT, "lease %" PRId64 " expired or not found",
			         id);
	}
	json_decref(o);
	return r;
}

/* One of a txn's responses: a range's kvs go to got. */
static int txn_response(json_t *j, struct etcd_kvs *got, char *err, size_t errlen)
{
	if (!json_is_object(j) || json_object_size(j) != 1)
		return errf(err, errlen, -EPROTO, "a txn response is not a one-field object");
	const char *name = json_object_iter_key(json_object_iter(j));
	json_t *v = json_object_iter_value(json_object_iter(j));
	if (!json_is_object(v))
		return errf(err, errlen, -EPROTO, "txn response \"%s\" is not an object", name);
	if (strcmp(name, "response_range") == 0)
		return parse_kvs(v, got, err, errlen);
	if (strcmp(name, "response_put") == 0 || strcmp(name, "response_delete_range") == 0)
		return 0;
	return errf(err, errlen, -EPROTO, "unexpected txn response \"%s\"", name);
}

int etcd_json_parse_txn(const char *buf, size_t len, bool *succeeded, struct etcd_kvs *got,
                        char *err, size_t errlen)
{
	struct etcd_kvs k = { 0 };
	*succeeded = false;
	if (got)
		memset(got, 0, sizeof(*got));
	json_t *o = load(buf, len, 0, err, errlen);
	if (!o)
		return -EPROTO;
	json_t *a = json_object_get(o, "responses");
	int r = header_rev(o, &k.revision, err, errlen);
	if (!r)
		r = get_bool(o, "succeeded", succeeded, err, errlen);
	if (!r && a && !json_is_null(a) && !json_is_array(a))
		r = errf(err, errlen, -EPROTO, "field \"responses\" is not an array");
	if (!r && json_array_size(a) > ETCD_TXN_MAX)
		r = errf(err, errlen, -EPROTO, "txn answer holds %zu responses, over %u",
		         json_array_size(a), ETCD_TXN_MAX);
	for (size_t i = 0; !r && i < json_array_size(a); i++)
		r = txn_response(json_array_get(a, i), &k, err, errlen);
	json_decref(o);
	if (r)
		*succeeded = false;
	if (r || !got)
		etcd_kvs_free(&k);
	else
		*got = k;
	return r;
}

/* ---- requests -------------------------------------------------------- */

static int key_check(const char *key, bool empty_ok, char *err, size_t errlen)
{
	if (!key)
		return errf(err, errlen, -EINVAL, "no key");
	size_t n = strlen(key);
	if (n == 0 && !empty_ok)
		return errf(err, errlen, -EINVAL, "empty key");
	if (n > ETCD_KEY_MAX)
		return errf(err, errlen, -EINVAL, "key of %zu bytes is over %u", n, ETCD_KEY_MAX);
	return 0;
}

/* o[name] = base64 of p; -ENOMEM on failure. */
static int set_b64(json_t *o, const char *name, const void *p, size_t n)
{
	char *s = etcd_json_b64_encode(p, n);
	int r = s ? json_object_set_new(o, name, json_string(s)) : -1;
	free(s);
	return r ? -ENOMEM : 0;
}

/* o[name] = v as the decimal string the gateway reads for an int64. */
static int set_i64(json_t *o, const char *name, int64_t v)
{
	char s[24];
	snprintf(s, sizeof(s), "%" PRId64, v);
	return json_object_set_new(o, name, json_string(s)) ? -ENOMEM : 0;
}

/* *body = o as compact JSON unless r (an error) says otherwise; frees o. */
static int dump(json_t *o, int r, char **body, char *err, size_t errlen)
{
	*body = r ? NULL : json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (r == -ENOMEM || (!r && !*body))
		return errf(err, errlen, -ENOMEM, "out of memory building a request");
	return r;
}

/* {"key":k} or, for a prefix, {"key":k,"range_end":k with its last byte
 * below 0xff raised by one}; "\0" stands for "" and for "no end". */
static json_t *range_obj(const char *key, bool prefix, int *r, char *err, size_t errlen)
{
	json_t *o = json_object();
	*r = key_check(key, prefix, err, errlen);
	if (*r || !o)
		goto out;
	size_t n = strlen(key), i = n;
	char end[ETCD_KEY_MAX + 1];
	memcpy(end, key, n);
	while (i > 0 && (unsigned char)end[i - 1] == 0xff)
		i--;
	if (i > 0)
		end[i - 1]++;
	*r = set_b64(o, "key", n ? key : "", n ? n : 1);
	if (!*r && prefix)
		*r = set_b64(o, "range_end", i ? end : "", i ? i : 1);
out:
	if (!o)
		*r = -ENOMEM;
	if (*r) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *put_obj(const char *key, const char *val, size_t len, int64_t lease, int *r,
                       char *err, size_t errlen)
{
	json_t *o = json_object();
	*r = key_check(key, false, err, errlen);
	if (!*r && len > ETCD_VALUE_MAX)
		*r = errf(err, errlen, -EINVAL, "value of %zu bytes is over %u", len,
		          ETCD_VALUE_MAX);
	if (!*r && len && !val)
		*r = errf(err, errlen, -EINVAL, "no value");
	if (!*r && lease < 0)
		*r = errf(err, errlen, -EINVAL, "lease %" PRId64 " is negative", lease);
	if (!*r && !o)
		*r = -ENOMEM;
	if (!*r)
		*r = set_b64(o, "key", key, strlen(key));
	if (!*r)
		*r = set_b64(o, "value", len ? val : "", len);
	if (!*r && lease)
		*r = set_i64(o, "lease", lease);
	if (*r) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int etcd_json_range_req(const char *key, bool prefix, char **body, char *err, size_t errlen)
{
	int r;
	json_t *o = range_obj(key, prefix, &r, err, errlen);
	return dump(o, r, body, err, errlen);
}

int etcd_json_put_req(const char *key, const char *val, size_t len, int64_t lease, char **body,
                      char *err, size_t errlen)
{
	int r;
	json_t *o = put_obj(key, val, len, lease, &r, err, errlen);
	return dump(o, r, body, err, errlen);
}

int etcd_json_lease_req(const char *field, int64_t v, char **body, char *err, size_t errlen)
{
	json_t *o = json_object();
	int r = v > 0
	            ? 0
	            : errf(err, errlen, -EINVAL, "lease %s %" PRId64 " is not positive", field, v);
	if (!r)
		r = o ? set_i64(o, field, v) : -ENOMEM;
	return dump(o, r, body, err, errlen);
}

static json_t *cmp_obj(const struct etcd_cmp *c, int *r, char *err, size_t errlen)
{
	static const char *const target[] = { "MOD", "CREATE", "VERSION", "VALUE" };
	static const char *const field[] = { "mod_revision", "create_revision", "version",
		                             "value" };
	json_t *o = json_object();
	*r = key_check(c->key, false, err, errlen);
	if (!*r && (unsigned)c->target > ETCD_CMP_VALUE)
		*r = errf(err, errlen, -EINVAL, "compare target %d is unknown", (int)c->target);
	else if (!*r && c->target == ETCD_CMP_VALUE && !c->value)
		*r = errf(err, errlen, -EINVAL, "value compare without a value");
	else if (!*r && c->target == ETCD_CMP_VALUE && strlen(c->value) > ETCD_VALUE_MAX)
		*r = errf(err, errlen, -EINVAL, "compared value is over %u bytes", ETCD_VALUE_MAX);
	else if (!*r && c->target != ETCD_CMP_VALUE && c->rev < 0)
		*r = errf(err, errlen, -EINVAL, "compared %s %" PRId64 " is negative",
		          field[c->target], c->rev);
	if (!*r && !o)
		*r = -ENOMEM;
	if (!*r)
		*r = set_b64(o, "key", c->key, strlen(c->key));
	if (!*r && (json_object_set_new(o, "target", json_string(target[c->target])) ||
	            json_object_set_new(o, "result", json_string("EQUAL"))))
		*r = -ENOMEM;
	if (!*r && c->target == ETCD_CMP_VALUE)
		*r = set_b64(o, "value", c->value, strlen(c->value));
	else if (!*r)
		*r = set_i64(o, field[c->target], c->rev);
	if (*r) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* One op as {"request_put":{...}}, {"request_delete_range":...} or
 * {"request_range":...}. */
static json_t *op_obj(const struct etcd_op *op, int *r, char *err, size_t errlen)
{
	json_t *in = NULL, *o;
	const char *name = "request_range";
	if (op->kind == ETCD_OP_PUT) {
		name = "request_put";
		in = put_obj(op->key, op->value, op->value_len, op->lease, r, err, errlen);
	} else if (op->kind == ETCD_OP_DELETE || op->kind == ETCD_OP_GET) {
		if (op->kind == ETCD_OP_DELETE)
			name = "request_delete_range";
		in = range_obj(op->key, false, r, err, errlen);
	} else {
		*r = errf(err, errlen, -EINVAL, "op kind %d is unknown", (int)op->kind);
	}
	if (!in)
		return NULL;
	o = json_object();
	/* json_object_set_new() takes in, also when it fails. */
	if (!o || json_object_set_new(o, name, in)) {
		if (!o)
			json_decref(in);
		json_decref(o);
		*r = -ENOMEM;
		return NULL;
	}
	return o;
}

static int ops_array(json_t *txn, const char *name, const struct etcd_op *ops, size_t n, char *err,
                     size_t errlen)
{
	int r = 0;
	if (n > ETCD_TXN_MAX)
		return errf(err, errlen, -EINVAL, "%zu ops in %s, over %u", n, name, ETCD_TXN_MAX);
	json_t *a = json_array();
	if (!a || json_object_set_new(txn, name, a))
		return -ENOMEM;
	for (size_t i = 0; i < n && !r; i++) {
		json_t *op = op_obj(&ops[i], &r, err, errlen);
		if (op && json_array_append_new(a, op))
			r = -ENOMEM;
	}
	return r;
}

int etcd_json_txn_req(const struct etcd_cmp *c, size_t nc, const struct etcd_op *ok, size_t nok,
                      const struct etcd_op *fail, size_t nfail, char **body, char *err,
                      size_t errlen)
{
	json_t *o = json_object(), *a = json_array();
	int r = o && a && !json_object_set_new(o, "compare", a) ? 0 : -ENOMEM;
	if (!o)
		json_decref(a);
	if (!r && nc > ETCD_TXN_MAX)
		r = errf(err, errlen, -EINVAL, "%zu compares, over %u", nc, ETCD_TXN_MAX);
	for (size_t i = 0; i < nc && !r; i++) {
		json_t *cmp = cmp_obj(&c[i], &r, err, errlen);
		if (cmp && json_array_append_new(a, cmp))
			r = -ENOMEM;
	}
	if (!r)
		r = ops_array(o, "success", ok, nok, err, errlen);
	if (!r)
		r = ops_array(o, "failure", fail, nfail, err, errlen);
	return dump(o, r, body, err, errlen);
}
