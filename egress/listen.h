/* A socket on the gateway's address, in the event loop (listen.c): the
 * resolver's and the proxy's listeners. */
#ifndef COVE_EGRESS_LISTEN_H
#define COVE_EGRESS_LISTEN_H

#include <stdint.h>

#include "egress.h"

/* egress_listen_gw() - a nonblocking @type socket bound to the gateway's
 * @port (listening, backlog 128, when it is a stream), in @e's loop as
 * @ev with @fn.  0 or -errno (then @ev->fd is -1). */
int egress_listen_gw(struct egress *e, int type, uint16_t port, struct ev *ev,
                     void (*fn)(struct ev *, uint32_t)) __attribute__((warn_unused_result));

#endif
