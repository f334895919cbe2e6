/* The template memory cache (memcache.c): template memory files copied
 * onto a tmpfs with huge pages, for restores to map instead. */
#ifndef COVE_MEMCACHE_H
#define COVE_MEMCACHE_H

#include "lib/base/cove_types.h"
#include <stdbool.h>
#include <stddef.h>

#define MEMCACHE_NAME_MAX 128

/* Makes the cache usable: for root without COVE_MEMCACHE_DIR, mounts the
 * tmpfs (huge=within_size) on /run/cove-memcache once per boot.  1 when
 * there is a cache, else 0 with why filled.  coved calls it before its
 * pool spawns VMMs, whose mount namespaces are copies of its own. */
int memcache_prepare(char *why, size_t whylen);

/* The cache's copy of snapshot_dir's memory file, made now if it is not
 * there (under the cache's lock: concurrent first restores copy once).
 * 1 with out holding its path; 0 when the restore should map the
 * original (why says why).  Never an error: the cache only speeds up. */
int memcache_get(const char *snapshot_dir, char *out, size_t outlen, char *why, size_t whylen);

/* cove_memcache_prune (lib/cove.h) removes the copies whose original is
 * gone or changed; running VMMs keep theirs mapped until they exit. */

/* ---- part of cove.h's API ---- */

/* Removes the template memory cache's copies whose original memory file
 * is gone or changed (lib/vmm/memcache.h); cove template rm does it itself. */
void cove_memcache_prune(void);

#endif
