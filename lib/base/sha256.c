/* SHA-256 through libcrypto's EVP interface (sha256.h). */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/base/sha256.h"

void sha256_init(struct sha256 *s)
{
	s->ctx = EVP_MD_CTX_new();
	s->failed = !s->ctx || EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	if (!s->failed && len && EVP_DigestUpdate(s->ctx, data, len) != 1)
		s->failed = true;
}

void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN])
{
	unsigned int n = 0;
	if (!s->ctx || s->failed || EVP_DigestFinal_ex(s->ctx, out, &n) != 1 || n != SHA256_LEN) {
		fputs("cove: libcrypto could not compute a SHA-256 (out of memory)\n", stderr);
		abort();
	}
	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
}

void sha256_hex(const uint8_t d[SHA256_LEN], char out[SHA256_HEX])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < SHA256_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[2 * SHA256_LEN] = 0;
}
