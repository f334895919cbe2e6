/* The working-set record's host side (prefetch.c). */
#ifndef COVE_VMM_PREFETCH_H
#define COVE_VMM_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/handle.h"

/* After a restore from snapshot_dir (ram_bytes of guest RAM, 0: unknown):
 * whether the first exec should record the working set (none recorded
 * yet, the directory writable, COVE_PREFETCH is not 0). */
void prefetch_plan(struct cove_sandbox *sb, const char *snapshot_dir, uint64_t ram_bytes);

/* Takes the record planned (once): 0 also when none was planned. */
int prefetch_take(struct cove_sandbox *sb, char *err, size_t errlen);

#endif
