/* qcow2 backend internals shared with its tests and fuzzer.  The VMM
 * itself goes through disk_open_err() or disk_qcow2_open() (disk.h). */
#ifndef COVE_QCOW2_H
#define COVE_QCOW2_H

#include "backend/disk.h"

/* Backing files allowed below one image (a raw base counts as one). */
#define QCOW2_MAX_CHAIN 16

/* Flags for disk_qcow2_open_flags(). */
#define QCOW2_OPEN_NO_BACKING 0x1u /* refuse images that name a backing file */
#define QCOW2_OPEN_QUIET      0x2u /* no stderr note when a request hits bad metadata */

/* disk_qcow2_open() with flags; the fuzzer opens hostile images with
 * QCOW2_OPEN_NO_BACKING | QCOW2_OPEN_QUIET so they cannot name host
 * files.  Flags apply to the whole backing chain. */
int disk_qcow2_open_flags(const char *path, bool read_only, unsigned int flags, struct disk **out,
                          char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
