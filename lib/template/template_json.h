/* template.json (template_json.c): a template's manifest from its text
 * and back. */
#ifndef COVE_TEMPLATE_JSON_H
#define COVE_TEMPLATE_JSON_H

#include <stddef.h>

#include "lib/template/template_manifest.h"

/* The pure part, for tests and the fuzz target: a manifest from its JSON
 * text (every field type- and bounds-checked; -EINVAL with a message),
 * and the JSON of one (malloc'ed, NULL when out of memory). */
int template_manifest_parse(const char *text, size_t len, struct cove_template_manifest *m,
                            char *err, size_t errlen) __attribute__((warn_unused_result));
char *template_manifest_dump(const struct cove_template_manifest *m);

#endif
