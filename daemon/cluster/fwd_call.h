/* Buffered calls to another coved node (libcurl): the whole request
 * body in, the whole answer out (bounded), for a create placed on another
 * node and a fan-out list; and such an answer relayed to the client. */
#ifndef COVED_CLUSTER_FWD_CALL_H
#define COVED_CLUSTER_FWD_CALL_H

#include <microhttpd.h>
#include <stddef.h>

#include "daemon/cluster/fwd_http.h"

/* A buffered answer: a create's, a fan-out list's. */
struct fwd_answer {
	long status; /* the owner's HTTP status */
	char *body;  /* malloc'ed, NUL-ended (not counted in len); never NULL on success */
	size_t len;
	char *content_type; /* malloc'ed, or NULL when the owner sent none */
};

/* Most bytes fwd_call takes of an answer's body. */
#define FWD_ANSWER_MAX (16u * 1024 * 1024)

/* fwd_call() - one call to the owner at t with the whole body (len bytes;
 * body may be NULL when len is 0), the whole answer read into a (over
 * FWD_ANSWER_MAX fails).  client_headers ("Name: value", NULL-ended, may
 * be NULL) pass on under the rules of fwd_open; timeout_ms bounds the
 * whole call.
 * Return: 0 with *a filled (free it with fwd_answer_free) whenever the
 * owner answered, whatever its status; else, and err says why:
 * -ECONNREFUSED (the owner could not be reached), -ETIMEDOUT, -EMSGSIZE
 * (answer too big), -EINVAL (a bad target or method), -ENOMEM, -EPROTO. */
int fwd_call(const struct fwd_target *t, const char *method, const char *url_with_query,
             const char *const *client_headers, const char *body, size_t len, unsigned timeout_ms,
             struct fwd_answer *a, char *err, size_t errlen) __attribute__((warn_unused_result));

/* fwd_answer_free() - frees what fwd_call put in a and zeroes it. */
void fwd_answer_free(struct fwd_answer *a);

/* fwd_relay() - queues a on c as the owner gave it: status, body and
 * Content-Type (a status out of 200..999 goes as a 502). */
enum MHD_Result fwd_relay(struct MHD_Connection *c, const struct fwd_answer *a);

#endif
