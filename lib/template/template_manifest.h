/* A template's spec and its manifest, template.json (template_manifest.c):
 * the steps, the JSON text and its checks, the inputs hash.  Pure: no
 * store, no sandbox. */
#ifndef COVE_TEMPLATE_MANIFEST_H
#define COVE_TEMPLATE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/sha256.h"

#define COVE_TEMPLATE_NAME_MAX  64   /* 1-64 of [A-Za-z0-9_.-], not starting with '.' */
#define COVE_TEMPLATE_STEPS_MAX 64   /* --run and --put steps */
#define COVE_TEMPLATE_RUN_MAX   4096 /* bytes of one --run command line */

enum { COVE_TEMPLATE_NET_OFF, COVE_TEMPLATE_NET_NONE, COVE_TEMPLATE_NET_OPEN };

enum cove_template_step_kind { COVE_STEP_RUN, COVE_STEP_PUT };

struct cove_template_step {
	enum cove_template_step_kind kind;
	char *run;   /* RUN: a command line for /bin/sh -c */
	char *local; /* PUT: the local file (absolute) */
	char *guest; /* PUT: where it goes in the guest (absolute) */
};

/* What a template is built from; every string malloc'ed (freed by
 * cove_template_spec_free). */
struct cove_template_spec {
	char name[COVE_TEMPLATE_NAME_MAX + 1];
	char *vmm, *kernel, *image; /* absolute paths */
	unsigned int cpus;
	uint64_t memory_mib;
	uint64_t disk_size; /* 0: the image's */
	int net;            /* COVE_TEMPLATE_NET_*: a NIC (restores may get a network), and the
	            policy its build's steps run under */
	struct cove_template_step *steps;
	size_t nsteps;
};

/* A template.json: its spec, the inputs hash it was built with, when. */
struct cove_template_manifest {
	struct cove_template_spec spec;
	char inputs_hash[SHA256_HEX];
	int64_t created; /* Unix seconds */
};

void cove_template_spec_free(struct cove_template_spec *s);

/* Whether name is a valid template name. */
bool cove_template_name_valid(const char *name);

/* Appends a step (strings copied; a PUT's local path made absolute).
 * -EINVAL (message) for a bad or over-long step or too many of them. */
int cove_template_add_run(struct cove_template_spec *s, const char *cmd, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int cove_template_add_put(struct cove_template_spec *s, const char *local, const char *guest,
                          char *err, size_t errlen) __attribute__((warn_unused_result));

/* The pure part, for tests and the fuzz target: a manifest from its JSON
 * text (every field type- and bounds-checked; -EINVAL with a message),
 * and the JSON of one (malloc'ed, NULL when out of memory). */
int template_manifest_parse(const char *text, size_t len, struct cove_template_manifest *m,
                            char *err, size_t errlen) __attribute__((warn_unused_result));
char *template_manifest_dump(const struct cove_template_manifest *m);

/* The inputs hash from the file hashes already known (hex, in the order
 * vmm, kernel, image, then one per PUT step): the pure half of
 * cove_template_hash. */
void template_hash_inputs(const struct cove_template_spec *s, const char *vmm, const char *kernel,
                          const char *image, const char *const *puts, char hex[SHA256_HEX]);

/* The content hash of an open file: its size, then every 4 KiB block that
 * is not all zeros with its index, so a sparse copy hashes as the file. */
int template_file_hash(int fd, char hex[SHA256_HEX]) __attribute__((warn_unused_result));

#endif
