/* A webhook's registration (POST /webhooks) and the signature of what it
 * is sent (docs/daemon.md, "Webhooks").  Pure; the parser is fuzzed
 * (fuzz_jchain). */
#ifndef COVED_SANDBOXES_WEBHOOK_REQ_H
#define COVED_SANDBOXES_WEBHOOK_REQ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define COVED_WEBHOOK_URL_MAX    2048
#define COVED_WEBHOOK_SECRET_MIN 16
#define COVED_WEBHOOK_SECRET_MAX 256
#define COVED_WEBHOOK_SIG_LEN    64 /* hex HMAC-SHA-256 */

struct coved_webhook_req {
	char *url;      /* http:// or https:// */
	char *secret;   /* the HMAC key; write-only */
	unsigned types; /* bits of coved_event_bit(); 0: every type */
};

/* coved_event_bit() - the bit of a lifecycle event type, 0 when unknown. */
unsigned coved_event_bit(const char *type);

/* coved_webhook_parse() - {"url", "secret", "events": [types]} into r.
 * Return: 0, or -1 with a one-line err (r freed). */
int coved_webhook_parse(json_t *body, struct coved_webhook_req *r, char *err, size_t errlen);
void coved_webhook_req_free(struct coved_webhook_req *r);

/* coved_webhook_sign() - hex HMAC-SHA-256 under @secret of
 * "<ts>.<body>" (ts: Unix seconds in decimal) into @out.
 * Return: 0, or -1 when libcrypto failed (out of memory). */
int coved_webhook_sign(const char *secret, int64_t ts, const char *body, size_t len,
                       char out[COVED_WEBHOOK_SIG_LEN + 1]);

/* The event types' names, in bit order, NULL-terminated. */
extern const char *const coved_event_types[];

#endif
