/* Internals of the qcow2 backend shared by its data path (disk_qcow2.c:
 * L1/L2, refcounts, reads and writes) and its opening (disk_qcow2_open.c:
 * header, extensions, tables, backing chain); the state and file access
 * both use are disk_qcow2_io.h's.  Nothing outside backend/disk_qcow2*.c
 * includes it. */
#ifndef COVE_DISK_QCOW2_PRIV_H
#define COVE_DISK_QCOW2_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/disk_qcow2.h"
#include "backend/disk_qcow2_io.h"

/* The ops table of an open image, and its close (frees q whole). */
extern const struct disk_ops qcow2_ops;
void qcow2_close(struct disk *d);

#endif
