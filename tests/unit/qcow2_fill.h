/* For unit tests: changes written into a qcow2 overlay through the VMM's
 * own backend, as a guest's writes would land there. */
#ifndef COVE_UNIT_QCOW2_FILL_H
#define COVE_UNIT_QCOW2_FILL_H

#include <stddef.h>
#include <stdint.h>

/* Writes buf at guest offset off of the qcow2 image at path (opened
 * read-write, closed again); fails the test on error. */
void qcow2_fill_write(const char *path, uint64_t off, const void *buf, size_t len);

/* Writes into the overlay every 64 KiB run where raw file `changed`
 * differs from raw file `base`; returns how many runs it wrote. */
unsigned int qcow2_fill_diff(const char *overlay, const char *base, const char *changed);

#endif
