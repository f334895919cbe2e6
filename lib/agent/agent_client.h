/* Talking to cove-agent (agent_client.c): connections that first wait for
 * a restore notice in flight, and the file transfers of cove.h. */
#ifndef COVE_AGENT_CLIENT_H
#define COVE_AGENT_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/agent/conn.h"
#include "lib/base/handle.h"

/* A connection to the agent (conn.h's agent_connect_unsettled) once a
 * restore notice in flight has its answer, within AGENT_STEP_MS
 * (agent_connect_until: by deadline, mono_ms()).  agent_connect_cancel
 * also gives up (-EINTR) once *cancel (a signal number set by a handler)
 * is non-zero; cancel may be NULL. */
int cove_agent_connect(struct cove_sandbox *sb, char *err, size_t errlen);
int agent_connect_until(struct cove_sandbox *sb, int64_t deadline, char *err, size_t errlen);
int agent_connect_cancel(struct cove_sandbox *sb, int64_t deadline, volatile int *cancel, char *err,
                         size_t errlen);

#endif
