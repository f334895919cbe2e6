/* A template's build (template_build.c): the sandbox it starts from, its
 * steps with each RUN, PUT and COPY's result cached by its key in the
 * store's .steps/, the defaults every exec of its sandboxes gets, its
 * start command and ready check, and the snapshot. */
#ifndef COVE_TEMPLATE_BUILD_H
#define COVE_TEMPLATE_BUILD_H

#include <stddef.h>

#include "lib/base/cove_types.h"
#include "lib/template/template_manifest.h"

#define STEPS_DIR ".steps"

/* Builds s into the new directory tmp (a snapshot directory; its
 * template.json is the caller's), keys being each step's key
 * (cove_template_hash_keys); force: every step runs again (their
 * results are cached anew).  c gets what sandboxes from it start with.
 * Returns 0, a failing step's status (1-255), or -errno with a message. */
int template_build(const char *store, const struct cove_template_spec *s,
                   const char (*keys)[SHA256_HEX], bool force, const char *tmp,
                   const struct cove_template_io *io, struct cove_template_config *c, char *err,
                   size_t errlen) __attribute__((warn_unused_result));

/* The state steps leave: the config c with ENV, WORKDIR and USER of
 * steps[0..n) applied (a later ENV of a name replaces it).  ARGs are not
 * kept.  -ENOMEM only. */
int template_fold_config(struct cove_template_config *c, const struct cove_template_step *steps,
                         size_t n) __attribute__((warn_unused_result));

#endif
