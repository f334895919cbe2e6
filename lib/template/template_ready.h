/* A template's start command and its ready check (template_ready.c). */
#ifndef COVE_TEMPLATE_READY_H
#define COVE_TEMPLATE_READY_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/base/cove_types.h"
#include "lib/template/template_manifest.h"

#define READY_NET_MAX   (1u << 20) /* bytes of /proc/net/tcp read */
#define READY_TIMEOUT_S 60         /* a start command's ready check, by default */
#define READY_POLL_MS   250        /* between two tries of the ready check */

/* Starts s->start_cmd as a detached process (through /bin/sh -c, with the
 * exec defaults) and waits until its ready check passes: s->ready_cmd
 * exits 0, or the guest listens on TCP s->ready_port, or (neither given)
 * it is still running after its first poll.  Fails if the process ends
 * first or s->ready_timeout_s (READY_TIMEOUT_S) passes. */
int template_start_ready(struct cove_sandbox *sb, const struct cove_template_spec *s,
                         const struct cove_template_io *io, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Whether the text of /proc/net/tcp or tcp6 has a socket listening on
 * port (state 0A).  Pure, for tests: bounded, a malformed line skipped. */
bool template_port_listening(const char *text, size_t len, unsigned int port);

#endif
