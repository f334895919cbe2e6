#include "tlsca.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errf.h"

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -1;
	int r = X509_add_ext(cert, ext, -1) ? 0 : -1;
	X509_EXTENSION_free(ext);
	return r;
}

/* A certificate for @key named @cn, valid from an hour ago until @until
 * (seconds from now), signed by @issuer/@ikey (itself when NULL). */
static X509 *make_cert(EVP_PKEY *key, const char *cn, long until, X509 *issuer, EVP_PKEY *ikey)
{
	X509 *x = X509_new();
	BIGNUM *bn = BN_new();
	X509_NAME *name = NULL;
	if (!x || !bn || !X509_set_version(x, 2) || !BN_rand(bn, 120, BN_RAND_TOP_ANY, 0) ||
	    !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), until) || !X509_set_pubkey(x, key))
		goto fail;
	name = X509_NAME_new();
	if (!name ||
	    !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
	                                (const unsigned char *)"Cove sandbox", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1,
	                                0) ||
	    !X509_set_subject_name(x, name) ||
	    !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name))
		goto fail;
	X509 *is = issuer ? issuer : x;
	if (!issuer) {
		if (add_ext(x, is, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
		    add_ext(x, is, NID_key_usage, "critical,keyCertSign,cRLSign") ||
		    add_ext(x, is, NID_subject_key_identifier, "hash"))
			goto fail;
	} else {
		char san[NETRULE_NAME_MAX + 8];
		snprintf(san, sizeof(san), "DNS:%s", cn);
		if (add_ext(x, is, NID_basic_constraints, "critical,CA:FALSE") ||
		    add_ext(x, is, NID_key_usage, "critical,digitalSignature") ||
		    add_ext(x, is, NID_ext_key_usage, "serverAuth") ||
		    add_ext(x, is, NID_subject_alt_name, san) ||
		    add_ext(x, is, NID_authority_key_identifier, "keyid:always"))
			goto fail;
	}
	if (!X509_sign(x, ikey ? ikey : key, EVP_sha256()))
		goto fail;
	X509_NAME_free(name);
	BN_free(bn);
	return x;
fail:
	X509_NAME_free(name);
	BN_free(bn);
	X509_free(x);
	return NULL;
}

bool tlsca_alpn_pick(const unsigned char *in, unsigned int inlen, const unsigned char **out,
                     unsigned char *outlen)
{
	static const unsigned char want[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
	for (unsigned i = 0; i < inlen;) {
		unsigned l = in[i];
		if (i + 1 + l > inlen)
			break;
		if (l == 8 && !memcmp(in + i, want, sizeof(want))) {
			*out = in + i + 1;
			*outlen = 8;
			return true;
		}
		i += 1 + l;
	}
	return false;
}

static int alpn_select(SSL *s, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)s;
	(void)arg;
	return tlsca_alpn_pick(in, inlen, out, outlen) ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_NOACK;
}

int tlsca_init(struct tlsca *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	t->bundle_fd = -1;
	if (!OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS,
	                      NULL))
		return errf(err, errlen, -EIO, "OpenSSL: cannot initialise");
	unsigned char id[6];
	char cn[64];
	if (RAND_bytes(id, sizeof(id)) != 1)
		return errf(err, errlen, -EIO, "OpenSSL: no random bytes");
	snprintf(cn, sizeof(cn), "Cove sandbox CA %02x%02x%02x%02x%02x%02x", id[0], id[1], id[2],
	         id[3], id[4], id[5]);
	t->ca_key = EVP_EC_gen("P-256");
	t->leaf_key = EVP_EC_gen("P-256");
	if (!t->ca_key || !t->leaf_key ||
	    !(t->ca = make_cert(t->ca_key, cn, TLSCA_CA_DAYS * 86400L, NULL, NULL)))
		return errf(err, errlen, -EIO, "OpenSSL: cannot make the sandbox CA");
	BIO *b = BIO_new(BIO_s_mem());
	char *data = NULL;
	long n = b && PEM_write_bio_X509(b, t->ca) ? BIO_get_mem_data(b, &data) : 0;
	if (n > 0 && (t->ca_pem = malloc((size_t)n + 1))) {
		memcpy(t->ca_pem, data, (size_t)n);
		t->ca_pem[n] = 0;
	}
	BIO_free(b);
	if (!t->ca_pem)
		return errf(err, errlen, -ENOMEM, "OpenSSL: cannot write the CA certificate");
	t->srv = SSL_CTX_new(TLS_server_method());
	if (!t->srv)
		return errf(err, errlen, -EIO, "OpenSSL: no server context");
	SSL_CTX_set_min_proto_version(t->srv, TLS1_2_VERSION);
	SSL_CTX_set_options(t->srv, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION |
	                                SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_num_tickets(t->srv, 0);
	SSL_CTX_set_session_cache_mode(t->srv, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_mode(t->srv, SSL_MODE_ENABLE_PARTIAL_WRITE |
	                             SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
	                             SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_alpn_select_cb(t->srv, alpn_select, NULL);
	/* A warm-up leaf: the signing code paths are loaded before confinement. */
	if (!tlsca_leaf(t, "warm.up.invalid"))
		return errf(err, errlen, -EIO, "OpenSSL: cannot sign a leaf certificate");
	t->bundle_fd = open(TLSCA_BUNDLE, O_RDONLY | O_CLOEXEC);
	/* No bundle is no error: a rules file may name its own upstream CA.
	 * The client context is made with the first rules (tlsca_upstream). */
	return 0;
}

X509 *tlsca_leaf(struct tlsca *t, const char *name)
{
	for (unsigned i = 0; i < TLSCA_CACHE; i++)
		if (t->cache[i].cert && !strcmp(t->cache[i].name, name))
			return t->cache[i].cert;
	if (strlen(name) > NETRULE_NAME_MAX)
		return NULL;
	X509 *x = make_cert(t->leaf_key, name, TLSCA_CA_DAYS * 86400L, t->ca, t->ca_key);
	if (!x)
		return NULL;
	struct tlsca_leaf *l = &t->cache[t->next++ % TLSCA_CACHE];
	X509_free(l->cert);
	l->cert = x;
	snprintf(l->name, sizeof(l->name), "%s", name);
	return x;
}

static int add_pems(X509_STORE *st, const char *pem, size_t len)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	int n = 0;
	X509 *x;
	while (b && (x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		if (X509_STORE_add_cert(st, x))
			n++;
		X509_free(x);
	}
	ERR_clear_error();
	BIO_free(b);
	return n;
}

/* The host's bundle, read from the fd kept since start-up. */
static char *read_bundle(struct tlsca *t, size_t *len)
{
	if (t->bundle_fd < 0 || lseek(t->bundle_fd, 0, SEEK_SET) < 0)
		return NULL;
	char *buf = malloc(TLSCA_BUNDLE_MAX);
	size_t got = 0;
	while (buf && got < TLSCA_BUNDLE_MAX) {
		ssize_t k = read(t->bundle_fd, buf + got, TLSCA_BUNDLE_MAX - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	*len = got;
	return buf;
}

int tlsca_upstream(struct tlsca *t, const char *pem, size_t len, char *err, size_t errlen)
{
	bool custom = pem && len > 0;
	if (!custom && t->cli && !t->cli_custom)
		return 0; /* the host's bundle is already in force */
	SSL_CTX *c = SSL_CTX_new(TLS_client_method());
	X509_STORE *st = X509_STORE_new();
	if (!c || !st) {
		SSL_CTX_free(c);
		X509_STORE_free(st);
		return errf(err, errlen, -ENOMEM, "OpenSSL: no client context");
	}
	SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_options(c, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
	                        SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
	if (custom) {
		if (!add_pems(st, pem, len)) {
			SSL_CTX_free(c);
			X509_STORE_free(st);
			return errf(err, errlen, -EINVAL, "upstream_ca holds no PEM certificate");
		}
	} else {
		size_t bl = 0;
		char *b = read_bundle(t, &bl);
		if (b)
			add_pems(st, b, bl);
		free(b);
	}
	SSL_CTX_set_cert_store(c, st);
	SSL_CTX_free(t->cli);
	t->cli = c;
	t->cli_custom = custom;
	return 0;
}

void tlsca_free(struct tlsca *t)
{
	for (unsigned i = 0; i < TLSCA_CACHE; i++)
		X509_free(t->cache[i].cert);
	X509_free(t->ca);
	EVP_PKEY_free(t->ca_key);
	EVP_PKEY_free(t->leaf_key);
	SSL_CTX_free(t->srv);
	SSL_CTX_free(t->cli);
	free(t->ca_pem);
	if (t->bundle_fd >= 0)
		close(t->bundle_fd);
	memset(t, 0, sizeof(*t));
	t->bundle_fd = -1;
}
