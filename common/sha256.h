/* SHA-256 (FIPS 180-4), for content hashes of files the host reads
 * (templates' inputs).  Not for secrets: no constant-time promises. */
#ifndef COVE_SHA256_H
#define COVE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_HEX (2 * SHA256_LEN + 1) /* hex digest with its NUL */

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	uint8_t buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN]);

/* Lower-case hex of a digest into out (SHA256_HEX bytes). */
void sha256_hex(const uint8_t d[SHA256_LEN], char out[SHA256_HEX]);

#endif
