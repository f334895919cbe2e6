/* A COPY step (template_copy.c): files from a build context folder or a
 * tar archive into a running sandbox through its agent, with the owner
 * the step names (resolved in the guest, from its /etc/passwd). */
#ifndef COVE_TEMPLATE_COPY_H
#define COVE_TEMPLATE_COPY_H

#include <stddef.h>

#include "lib/base/cove_types.h"
#include "lib/template/template_manifest.h"

#define COPY_ARCHIVE_ENTRIES 262144 /* entries of one COPY archive */

/* Copies what t names into sb.  Folders are made (parents too), regular
 * files streamed, symbolic links made as they are; a hard link in an
 * archive is copied as a file.  Return: 0, or -errno with one line. */
int template_copy(struct cove_sandbox *sb, const struct cove_template_step *t, char *err,
                  size_t errlen) __attribute__((warn_unused_result));

#endif
