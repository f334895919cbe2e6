/* Freezing the root file system for the host's filesystem diff (PROTO_FREEZE,
 * PROTO_THAW; docs/diff.md): sync, FIFREEZE on /, and a timer that thaws
 * it by itself, so a host that never comes back cannot leave the guest's
 * writers blocked. */
#ifndef COVE_AGENT_FSFREEZE_H
#define COVE_AGENT_FSFREEZE_H

#include <stdint.h>

#include "conn.h"

/* FREEZE: OK {} once / is frozen (EBUSY when it already is); thawed again
 * after timeout_ms unless a THAW came first. */
int agent_freeze(struct agent_conn *c, uint32_t id, uint32_t timeout_ms);

/* THAW: OK {"was_frozen": B}. */
int agent_thaw(struct agent_conn *c, uint32_t id);

#endif
