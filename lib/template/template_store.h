/* The template store (template_store.c): its directory, the file hashes
 * cached by stat, the locks, loading, listing and removing templates.
 * The store is $COVE_TEMPLATE_DIR, else $XDG_CACHE_HOME/cove/templates,
 * else ~/.cache/cove/templates. */
#ifndef COVE_TEMPLATE_STORE_H
#define COVE_TEMPLATE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/template/template_manifest.h"

/* How long a builder waits for another build of the same name (setup may
 * be long). */
#define LOCK_BUILD_WAIT_MS (30 * 60 * 1000)

/* Makes dir (which must outlive every later call) the store of this
 * process, before $COVE_TEMPLATE_DIR and the cache directory: coved's
 * templates_dir.  Safe to call from any thread. */
void cove_template_set_store(const char *dir);

/* The store's directory into out (made 0700 when missing; refused unless
 * it is a directory of ours that no one else may write). */
int cove_template_store(char *out, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The inputs hash of s (file contents through the store's stat-keyed
 * cache, so an unchanged file is not read again). */
int cove_template_hash(const struct cove_template_spec *s, char hex[SHA256_HEX], char *err,
                       size_t errlen) __attribute__((warn_unused_result));

/* The same, and each step's key (nsteps entries; NULL: not wanted). */
int cove_template_hash_keys(const struct cove_template_spec *s, char (*keys)[SHA256_HEX],
                            char hex[SHA256_HEX], char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* What the build starts from, as hashed: the image file's content hash;
 * for an imported image what its reference names and the agent's hash;
 * for a parent template its inputs hash. */
int template_base_id(const char *store, const struct cove_template_spec *s, char *out, size_t len,
                     char *err, size_t errlen) __attribute__((warn_unused_result));

/* Reads the manifest of the store's template name (-ENOENT: none). */
int cove_template_load(const char *name, struct cove_template_manifest *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));

struct cove_template_info {
	char name[COVE_TEMPLATE_NAME_MAX + 1];
	char inputs_hash[SHA256_HEX];
	uint64_t bytes; /* allocated on disk */
	int64_t created;
};

/* The store's templates, sorted by name (malloc'ed array; free()). */
int cove_template_list(struct cove_template_info **out, size_t *count, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Removes a template (waits up to 60 s for restores holding it). */
int cove_template_remove(const char *name, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* NAME's lock file in the store's .lock/ (open, not locked): the fd or
 * -errno with a message. */
int template_lock_open(const char *store, const char *name, char *err, size_t errlen);

/* The bytes the regular files directly in dir take on disk. */
uint64_t template_dir_bytes(const char *dir);

/* Removes a template or build directory (files only, never following a
 * link) and the directory itself. */
void template_remove_dir(const char *path);

/* The manifest of the template at dir. */
int template_read_manifest(const char *dir, struct cove_template_manifest *m, char *err,
                           size_t errlen);

#endif
