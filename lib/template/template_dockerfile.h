/* Dockerfiles into a template's spec (template_dockerfile.c). */
#ifndef COVE_TEMPLATE_DOCKERFILE_H
#define COVE_TEMPLATE_DOCKERFILE_H

#include <stddef.h>

#include "lib/template/template_manifest.h"

/* Adds to s what the Dockerfile at path says: FROM (an oci:,
 * oci-archive: or docker-archive: image, else a template of that name,
 * else a registry reference), then its steps; COPY reads context (NULL:
 * a COPY is refused); CMD and ENTRYPOINT are recorded.  build_args:
 * "NAME=value" overriding ARG defaults.  -errno with "Dockerfile:LINE:
 * ..." in err. */
int cove_template_from_dockerfile(struct cove_template_spec *s, const char *path,
                                  const char *context, const char *const *build_args, size_t nargs,
                                  char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
