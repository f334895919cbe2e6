/* Webhook registrations and signatures (webhook_req.h). */
#include "daemon/sandboxes/webhook_req.h"

#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "lib/base/sha256.h"

const char *const coved_event_types[] = { "created", "paused", "resumed",   "snapshotted", "forked",
	                                  "stopped", "killed", "timed_out", "dead",        NULL };

unsigned coved_event_bit(const char *type)
{
	for (unsigned i = 0; type && coved_event_types[i]; i++)
		if (strcmp(type, coved_event_types[i]) == 0)
			return 1u << i;
	return 0;
}

static bool url_ok(const char *u)
{
	size_t n = strlen(u);
	size_t scheme = strncmp(u, "http://", 7) == 0 ? 7 : strncmp(u, "https://", 8) == 0 ? 8 : 0;
	if (!scheme || n <= scheme || n > COVED_WEBHOOK_URL_MAX || u[scheme] == '/')
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)u[i] <= 0x20 || (unsigned char)u[i] >= 0x7f)
			return false;
	return true;
}

void coved_webhook_req_free(struct coved_webhook_req *r)
{
	free(r->url);
	if (r->secret)
		explicit_bzero(r->secret, strlen(r->secret));
	free(r->secret);
	r->url = r->secret = NULL;
}

int coved_webhook_parse(json_t *body, struct coved_webhook_req *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	const char *k;
	json_t *v;
	if (!json_is_object(body))
		return errf(err, errlen, -1, "the body must be a JSON object");
	json_object_foreach(body, k, v)
	{
		if (strcmp(k, "url") && strcmp(k, "secret") && strcmp(k, "events"))
			return errf(err, errlen, -1, "unknown field '%.40s'", k);
	}
	json_t *url = json_object_get(body, "url"), *sec = json_object_get(body, "secret");
	json_t *evs = json_object_get(body, "events");
	if (!json_is_string(url) || !url_ok(json_string_value(url)))
		return errf(
		    err, errlen, -1,
		    "'url' must be an http:// or https:// URL of at most %d printable bytes",
		    COVED_WEBHOOK_URL_MAX);
	size_t sl = json_is_string(sec) ? json_string_length(sec) : 0;
	if (sl < COVED_WEBHOOK_SECRET_MIN || sl > COVED_WEBHOOK_SECRET_MAX ||
	    strlen(json_string_value(sec)) != sl)
		return errf(err, errlen, -1, "'secret' must be a string of %d to %d bytes",
		            COVED_WEBHOOK_SECRET_MIN, COVED_WEBHOOK_SECRET_MAX);
	if (evs && !json_is_null(evs)) {
		size_t i;
		json_t *e;
		if (!json_is_array(evs) || json_array_size(evs) == 0)
			return errf(err, errlen, -1, "'events' must be a list of event types");
		json_array_foreach(evs, i, e)
		{
			unsigned b = coved_event_bit(json_string_value(e));
			if (!b) {
				r->types = 0;
				return errf(err, errlen, -1, "'events' has an unknown type");
			}
			r->types |= b;
		}
	}
	r->url = strdup(json_string_value(url));
	r->secret = strdup(json_string_value(sec));
	if (!r->url || !r->secret) {
		coved_webhook_req_free(r);
		return errf(err, errlen, -1, "out of memory");
	}
	return 0;
}

int coved_webhook_sign(const char *secret, int64_t ts, const char *body, size_t len,
                       char out[COVED_WEBHOOK_SIG_LEN + 1])
{
	char pre[32];
	int pl = snprintf(pre, sizeof(pre), "%lld.", (long long)ts);
	unsigned char mac[EVP_MAX_MD_SIZE];
	size_t ml = 0;
	EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *c = m ? EVP_MAC_CTX_new(m) : NULL;
	OSSL_PARAM p[] = { OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0),
		           OSSL_PARAM_construct_end() };
	_Static_assert(COVED_WEBHOOK_SIG_LEN + 1 == SHA256_HEX, "a hex SHA-256");
	bool ok = c && EVP_MAC_init(c, (const unsigned char *)secret, strlen(secret), p) == 1 &&
	          EVP_MAC_update(c, (const unsigned char *)pre, (size_t)pl) == 1 &&
	          EVP_MAC_update(c, (const unsigned char *)body, len) == 1 &&
	          EVP_MAC_final(c, mac, &ml, sizeof(mac)) == 1 && ml == SHA256_LEN;
	EVP_MAC_CTX_free(c);
	EVP_MAC_free(m);
	if (!ok)
		return -1;
	sha256_hex(mac, out);
	explicit_bzero(mac, sizeof(mac));
	return 0;
}
