/* The sandbox's own certificate authority and TLS contexts (issue 15).
 * cove-egress makes a P-256 CA in memory at start-up (valid from an hour
 * ago for TLSCA_CA_DAYS; its key never leaves this process), mints a leaf
 * certificate per intercepted name (cached, TLSCA_CACHE names), and holds
 * the two OpenSSL 3 contexts: the guest-facing server (TLS 1.2+, ALPN
 * http/1.1 only) and the upstream client (TLS 1.2+, peer verified against
 * the host's trust store or a CA the rules file names, host name checked).
 * Everything that reads files or loads code happens in tlsca_init, before
 * confinement; the host's bundle stays open as an fd and is parsed on the
 * first use. */
#ifndef COVE_EGRESS_TLSCA_H
#define COVE_EGRESS_TLSCA_H

#include <stdbool.h>
#include <stddef.h>

#include "netrule.h"

#define TLSCA_CA_DAYS    30
#define TLSCA_CACHE      64
#define TLSCA_BUNDLE     "/etc/ssl/certs/ca-certificates.crt"
#define TLSCA_BUNDLE_MAX (4 << 20)

typedef struct ssl_ctx_st SSL_CTX;
typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;

struct tlsca_leaf {
	char name[NETRULE_NAME_MAX + 1];
	X509 *cert;
};

struct tlsca {
	EVP_PKEY *ca_key, *leaf_key;
	X509 *ca;
	char *ca_pem; /* the certificate only (public), for the guest */
	SSL_CTX *srv, *cli;
	int bundle_fd;  /* the host's bundle, read when first needed; -1 */
	int cli_custom; /* cli trusts a rules file's upstream_ca */
	struct tlsca_leaf cache[TLSCA_CACHE];
	unsigned next; /* the cache slot replaced next */
};

/* tlsca_init() - the CA, its PEM, the server context and an open fd of
 * the host's bundle.  0, or -errno with one line in @err. */
int tlsca_init(struct tlsca *t, char *err, size_t errlen) __attribute__((warn_unused_result));

/* tlsca_leaf() - the cached or newly signed certificate for @name
 * (normalized), which the caller does not own; NULL on failure. */
X509 *tlsca_leaf(struct tlsca *t, const char *name);

/* tlsca_alpn_pick() - "http/1.1" in the guest's ALPN list @in (length-
 * prefixed names, bounds-checked: guest input), pointed at by @out. */
bool tlsca_alpn_pick(const unsigned char *in, unsigned int inlen, const unsigned char **out,
                     unsigned char *outlen);

/* tlsca_upstream() - the client context to use: trusting the CA
 * certificates in @pem (@len bytes) when @pem is given, else the host's
 * bundle.  Replaces t->cli (connections keep their own reference).
 * 0, or -errno with one line in @err (then t->cli is unchanged). */
int tlsca_upstream(struct tlsca *t, const char *pem, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

void tlsca_free(struct tlsca *t);

#endif
