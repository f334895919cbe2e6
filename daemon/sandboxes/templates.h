/* The templates coved's creates restore (lib/template.h's store). */
#ifndef COVED_SANDBOXES_TEMPLATES_H
#define COVED_SANDBOXES_TEMPLATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct coved;
struct cove_config;

/* A template coved knows by name without a config entry: an image's
 * template with a start command (templates.c lists them). */
struct coved_builtin {
	const char *tid, *image; /* its templateID; the image (cove_image_path) */
	const char *start;       /* the start command (docs/templates.md) */
	unsigned int ready_port, ready_timeout_s;
	uint64_t min_memory_mib; /* a create asking for less gets this much */
};

/* coved_template_for() - the template a create restores, when there is
 * one: 0 with *dir (malloc'ed) and *lockfd (close it once the restore has
 * started), 1 when the create boots cold (no store, an image of the
 * config's templates), or an HTTP status with msg.  cfg (cpus, memory,
 * disk size, image, net) says what the base template is of, and is made
 * a restore's (disk size 0, the template's network). */
int coved_template_for(struct coved *d, const char *tid, struct cove_config *cfg, bool net_given,
                       char **dir, int *lockfd, char *msg, size_t len);
/* Whether tid names a template in the store (not "base", not an image). */
bool coved_template_named(struct coved *d, const char *tid);
/* coved_template_shared() - the templates every tenant shares: the
 * config's templates and images ("base": its default image; *image
 * malloc'ed), else a template of the store (0 with *image NULL).
 * Return: 0, or 404 with msg when there is none. */
int coved_template_shared(struct coved *d, const char *tid, char **image, char *msg, size_t len);

/* The built-in templates and their count (*n). */
const struct coved_builtin *coved_template_builtins(size_t *n);

#endif
