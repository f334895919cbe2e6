/* A request coved received, passed on to the coved node that owns its
 * sandbox (libcurl), and the owner's answer passed back.  A streaming
 * forward never holds a whole body: the upload and the answer each go
 * through a bounded buffer between the connection's thread (libmicrohttpd,
 * a thread per connection) and a curl worker thread, so Connect server
 * streams, uploads and downloads of any size pass as they come.  Every
 * wait has a deadline (the target's idle_timeout_ms: no byte either way for
 * that long fails the call).  Buffered calls (a create's, a fan-out
 * list's) are fwd_call's (fwd_call.h, included here with struct
 * fwd_target). */
#ifndef COVED_CLUSTER_FORWARD_H
#define COVED_CLUSTER_FORWARD_H

#include <microhttpd.h>
#include <stddef.h>

#include "daemon/cluster/fwd_call.h"
#include "daemon/cluster/fwd_http.h"

/* One request's buffers: each way holds at most this much at once. */
#define FWD_BUFFER (256 * 1024)

struct fwd;

/* fwd_open() - starts forwarding the request on c: call it on the access
 * handler's first call of the request (the head is in), then answer
 * MHD_YES.  url is the path as libmicrohttpd gives it (decoded; it is
 * encoded again) and the query is rebuilt from the connection's
 * arguments.  Request headers pass on but for hop-by-hop ones and those
 * the target sets; a body goes with the client's Content-Length, or
 * chunked.  The owner is reached on a thread of its own from here on.
 * Return: the forward, for fwd_feed and fwd_close; NULL (err says why: a
 * bad target, no memory, no thread) and the caller answers 502. */
struct fwd *fwd_open(struct MHD_Connection *c, const char *method, const char *url,
                     const struct fwd_target *t, char *err, size_t errlen);

/* fwd_feed() - the access handler's every later call: an upload chunk
 * (*size > 0) is passed on, waiting while the upload buffer is full (the
 * idle deadline), and *size set to 0; the end (*size == 0) waits for the
 * owner's head and queues the answer: its status and headers and a body
 * that streams.  No owner: 502 ({"code","message"} naming base); no head
 * within the idle deadline: 504.  After a failure, or once the owner
 * answered without reading it all, the rest of an upload is read and
 * dropped (libmicrohttpd answers only at the end; such an early answer's
 * body waits in the answer buffer, so one over FWD_BUFFER ends in a 504).
 * Return: MHD_YES, or MHD_NO when no answer could be queued. */
enum MHD_Result fwd_feed(struct fwd *f, struct MHD_Connection *c, const char *data, size_t *size);

/* fwd_close() - from the request-completed callback, whether the answer
 * was sent whole, failed, or the client went away mid-stream: cancels the
 * transfer to the owner, joins its thread and frees f (the answer's body,
 * if libmicrohttpd still holds it, ends with an error).  f may be NULL. */
void fwd_close(struct fwd *f);

/* fwd_peak() - the most bytes f held at once in its two buffers (at most
 * 2 * FWD_BUFFER): what a forward costs, for tests and metrics. */
size_t fwd_peak(const struct fwd *f);

#endif
