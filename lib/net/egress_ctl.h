/* The client of cove-egress's control socket (egress_ctl.c): one JSON
 * request line, one answer line. */
#ifndef COVE_NET_EGRESS_CTL_H
#define COVE_NET_EGRESS_CTL_H

#include <stddef.h>

struct json_t;

/* net_ctl_call() - one request line to cove-egress's control socket
 * @sock, one answer line back (at most 4 KiB), within 5 s; an answer
 * without "ok":true is -EIO with its error.  0 or -errno with @err. */
int net_ctl_call(const char *sock, struct json_t *req, struct json_t **reply, char *err,
                 size_t errlen) __attribute__((warn_unused_result));
/* net_ctl_call in two halves: the request sent (a connected socket in
 * *fd), then its answer read (within the same limit from then; the fd is
 * closed).  net_pool_take sends a new policy and net_finish reads the
 * answer, so cove-egress applies it while cove-vmm starts. */
int net_ctl_send(const char *sock, struct json_t *req, int *fd, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int net_ctl_reply(int fd, const char *sock, struct json_t **reply, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#define EGRESS_SOCK "egress.sock" /* in the entry: the control socket */

#endif
