/* SHA-256 content hashes of files the host reads (templates' inputs),
 * through OpenSSL's EVP digests (libcrypto).  Not for secrets. */
#ifndef COVE_SHA256_H
#define COVE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_HEX (2 * SHA256_LEN + 1) /* hex digest with its NUL */

struct evp_md_ctx_st;
struct sha256 {
	struct evp_md_ctx_st *ctx;
	bool failed;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
/* The digest; frees the context.  libcrypto fails a SHA-256 only when out
 * of memory: that aborts with a line on stderr rather than hand back a
 * digest that could match another input's. */
void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN]);

/* Lower-case hex of a digest into out (SHA256_HEX bytes). */
void sha256_hex(const uint8_t d[SHA256_LEN], char out[SHA256_HEX]);

#endif
