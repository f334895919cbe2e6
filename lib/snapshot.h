/* A snapshot's note (snapshot.c): what cove_snapshot records beside the
 * snapshot files and a restore reads back. */
#ifndef COVE_LIB_SNAPSHOT_H
#define COVE_LIB_SNAPSHOT_H

#include <stdint.h>

#include "lib/base/registry.h"

/* The CPUs, memory and limits a snapshot was taken with, from its note;
 * 0 when unknown.  net: its network (on, policy, limits). */
void snapshot_note_read(const char *snapdir, unsigned int *cpus, uint64_t *memory_mib,
                        struct registry_limits *limits, struct registry_net *net);

#endif
