/* Removing the template store's caches that no template uses
 * (template_prune.c). */
#ifndef COVE_TEMPLATE_PRUNE_H
#define COVE_TEMPLATE_PRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cove_template_pruned {
	unsigned int steps;  /* step snapshots (.steps/<key>) */
	unsigned int rootfs; /* imported root file systems (.images/rootfs/) */
	uint64_t bytes;      /* what they took on disk */
};

/* Removes every step snapshot and imported root file system that no
 * template's disk chain goes through (a dry run only counts them).  Fails
 * (-EWOULDBLOCK-like, one line) while a build runs.  0 or -errno. */
int cove_template_prune(bool dry_run, struct cove_template_pruned *out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The store's prune lock, held shared by every build and exclusive by a
 * prune: the open, locked fd (close it to release), or -errno. */
int template_prune_lock(const char *store, bool exclusive, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
