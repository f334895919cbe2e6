/* Templates (template.c): a sandbox booted from an image, set up by
 * steps (shell commands, files copied in) and snapshotted into the
 * template store.  A template IS a snapshot directory (cove_restore takes
 * it) with template.json beside the snapshot files; the store's layout is
 * in docs/templates.md ("Templates").  A template records the SHA-256
 * of its inputs (cove-vmm, kernel and image contents, CPUs, memory, disk
 * size, NIC, the steps and the contents of the files they copy in): one
 * whose inputs changed is built again by cove_template_ensure.
 *
 * This header is the templates' API: it brings the spec and manifest
 * (template_manifest.h) and the store (template_store.h) along. */
#ifndef COVE_TEMPLATE_H
#define COVE_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "cove.h"
#include "lib/template/template_dockerfile.h"
#include "lib/template/template_json.h"
#include "lib/template/template_manifest.h"
#include "lib/template/template_store.h"

/* Fills s from cfg (vmm, kernel, image made absolute; cpus, memory, disk
 * size with their defaults) under name, without steps. */
int cove_template_spec_init(struct cove_template_spec *s, const char *name,
                            const struct cove_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The base template of cfg's image: cove_template_spec_init under the
 * name base-<image>-<cpus>x<memory>[-d<disk>][-net]-<8 hex of the paths>. */
int cove_template_base_spec(struct cove_template_spec *s, const struct cove_config *cfg, int net,
                            char *err, size_t errlen) __attribute__((warn_unused_result));

/* Makes sure the template s names exists and is built from s's inputs:
 * an up-to-date one is used as it is, a missing or outdated one is built
 * (cold boot, the steps, a snapshot), into a temporary directory renamed
 * into place at the end, so a failure leaves the old one or nothing.
 * Concurrent callers for one name wait for each other (a lock file): one
 * builds, the others use what it built.  On success dir holds the
 * template's path and *lockfd a shared lock that keeps it from being
 * replaced or removed; close it once the restore has started.
 * Returns 0, a step's exit status (1-255; 128+N for signal N) when a step
 * failed, or -errno with a message in err.  force: build even when up to
 * date. */
int cove_template_ensure(const struct cove_template_spec *s, bool force,
                         const struct cove_template_io *io, char *dir, size_t dirlen, int *lockfd,
                         char *err, size_t errlen) __attribute__((warn_unused_result));

/* Whether s is built only when asked (cove template build, the API): it
 * imports an image, starts from another template or copies a folder in,
 * whose sources a use need not find again.  Its uses take it as it is
 * (cove_template_use), never rebuilding it. */
bool cove_template_sealed(const struct cove_template_spec *s);

/* The store's template name as it is: its path into dir and a shared use
 * lock in *lockfd (close it once the restore has started).  -ENOENT when
 * there is none. */
int cove_template_use(const char *name, char *dir, size_t dirlen, int *lockfd, char *err,
                      size_t errlen) __attribute__((warn_unused_result));

/* The hash of the inputs the template at dir (a path cove_template_ensure
 * gave) was built from, into hash: 0, or -errno. */
int cove_template_built_hash(const char *dir, char hash[65]);

/* A fast path for a caller that remembers what cove_template_ensure
 * gave for unchanged inputs: the use lock of the template at dir (the
 * store's name's), shared, in *lockfd when it is still built from inputs
 * hashing to hash.  0 when held; 1 when it is not there as it was
 * (removed, rebuilt, or being built right now: call
 * cove_template_ensure); -errno on an error.  Never waits. */
int cove_template_hold(const char *dir, const char *hash, int *lockfd)
    __attribute__((warn_unused_result));

#endif
