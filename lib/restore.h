/* Starting a sandbox from a snapshot (restore.c; part of cove.h's API). */
#ifndef COVE_LIB_RESTORE_H
#define COVE_LIB_RESTORE_H

#include <stddef.h>

#include "lib/base/cove_types.h"

/* A template's snapshot directory holds its manifest beside the snapshot
 * files (lib/template/); a restore maps a template's memory from the
 * template memory cache. */
#define COVE_TEMPLATE_FILE "template.json"

/* Starts a sandbox from a snapshot directory.  Of cfg only vmm, name,
 * hostname (NULL: the sandbox's name, so restored copies tell themselves
 * apart), console_log, detached and boot_timeout_ms count: CPUs, memory and
 * disks come from the snapshot, each disk continuing on a fresh overlay in
 * the sandbox's directory.  Returns once the agent has taken the restore
 * notice (new clock, hostname, entropy). */
int cove_restore(const struct cove_config *cfg, const char *snapshot_dir, struct cove_sandbox **out,
                 char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
