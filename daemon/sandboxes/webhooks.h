/* Webhooks (docs/daemon.md): URLs a tenant registers, each sent every
 * lifecycle event of the tenant's sandboxes as a signed POST from one
 * worker thread: a bounded queue, every call with a deadline, retries
 * with exponential backoff up to a bound.  Registrations persist in
 * <state_dir>/webhooks.json (0600); their secrets are never answered,
 * logged or journaled. */
#ifndef COVED_SANDBOXES_WEBHOOKS_H
#define COVED_SANDBOXES_WEBHOOKS_H

#include <jansson.h>
#include <stddef.h>

struct coved;
struct coved_webhooks;

#define COVED_WEBHOOKS_PER_TENANT 16
#define COVED_WEBHOOK_QUEUE       1024 /* deliveries waiting; past it the oldest is dropped */
#define COVED_WEBHOOK_ATTEMPTS    6    /* 1 + 5 retries: 1, 2, 4, 8, 16 s apart */
#define COVED_WEBHOOK_TIMEOUT_MS  10000
#define COVED_WEBHOOK_HEADER_SIG  "X-Cove-Signature"
#define COVED_WEBHOOK_HEADER_TS   "X-Cove-Timestamp"

/* coved_webhooks_start() - reads the registrations and starts the worker.
 * Return: 0 or -errno with err. */
int coved_webhooks_start(struct coved *d, struct coved_webhooks **out, char *err, size_t errlen);
/* coved_webhooks_stop() - the worker told to end and joined (a delivery
 * in flight finishes within its deadline); queued ones are dropped. */
void coved_webhooks_stop(struct coved_webhooks *w);

/* coved_webhooks_post() - queues @ev (an event object) for every webhook of
 * @tenant that wants @type. */
void coved_webhooks_post(struct coved_webhooks *w, const char *tenant, const char *type,
                         json_t *ev);

/* The API (daemon/api/events.c; w from coved_events_hooks, may be NULL):
 * add and delete return 0 or an HTTP status with msg; *out and the list
 * never hold a secret. */
int coved_webhook_add(struct coved_webhooks *w, const char *tenant, json_t *body, json_t **out,
                      char *msg, size_t len);
json_t *coved_webhook_list(struct coved_webhooks *w, const char *tenant);
int coved_webhook_delete(struct coved_webhooks *w, const char *tenant, const char *id, char *msg,
                         size_t len);

#endif
