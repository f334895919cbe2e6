/* Queries to the upstream resolvers, from the sandbox netns (they leave
 * through the uplink): a fresh UDP socket per try (the kernel picks the
 * port), a random id, EGRESS_UPSTREAM_MS per try, each upstream in turn
 * twice at most.  The callback runs exactly once unless the owner cancels
 * first. */
#ifndef COVE_EGRESS_UPSTREAM_H
#define COVE_EGRESS_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "dns.h"
#include "egress.h"

struct upq;

/* @resp/@len: the answer (its id is @id; check with dns_filter_answer), or
 * NULL with @err (-ETIMEDOUT, -errno). */
typedef void (*upq_cb)(void *ctx, const uint8_t *resp, size_t len, uint16_t id, int err);

/* upq_start() - ask for @q's question.  Return: the query (for
 * upq_cancel), or NULL with errno set (EBUSY at EGRESS_UPQ_MAX). */
struct upq *upq_start(struct egress *e, const struct dns_question *q, upq_cb cb, void *ctx);

/* upq_cancel() - the owner is going away: no callback. */
void upq_cancel(struct upq *u);

#endif
