/* The qcow2 disk backend, and its internals shared with its tests and
 * fuzzer.  The VMM itself opens disks through disk_open.h. */
#ifndef COVE_DISK_QCOW2_H
#define COVE_DISK_QCOW2_H

#include "backend/disk.h"
#include "qcow2_hdr.h"

/* The qcow2 backend itself (versions 2 and 3; docs/qcow2.md): the disk's
 * size is the header's, unallocated clusters read from the backing chain
 * (or as zeros), writes allocate clusters at the end of the file. */
int disk_qcow2_open(const char *path, bool read_only, struct disk **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* QCOW2_MAX_CHAIN: files allowed below one image. */

/* Flags for disk_qcow2_open_flags(). */
#define QCOW2_OPEN_NO_BACKING 0x1u /* refuse images that name a backing file */
#define QCOW2_OPEN_QUIET      0x2u /* no stderr note when a request hits bad metadata */

/* disk_qcow2_open() with flags; the fuzzer opens hostile images with
 * QCOW2_OPEN_NO_BACKING | QCOW2_OPEN_QUIET so they cannot name host
 * files.  Flags apply to the whole backing chain. */
int disk_qcow2_open_flags(const char *path, bool read_only, unsigned int flags, struct disk **out,
                          char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
