/* Templates (lib/template.c): a sandbox booted from an image, set up by
 * steps (shell commands, files copied in) and snapshotted into the
 * template store.  A template IS a snapshot directory (cove_restore takes
 * it) with template.json beside the snapshot files; the store's layout is
 * in docs/ARCHITECTURE.md ("Templates").  A template records the SHA-256
 * of its inputs (cove-vmm, kernel and image contents, CPUs, memory, disk
 * size, NIC, the steps and the contents of the files they copy in): one
 * whose inputs changed is built again by cove_template_ensure.
 *
 * The store is $COVE_TEMPLATE_DIR, else $XDG_CACHE_HOME/cove/templates,
 * else ~/.cache/cove/templates. */
#ifndef COVE_TEMPLATE_H
#define COVE_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cove.h"
#include "sha256.h"

#define COVE_TEMPLATE_NAME_MAX  64   /* 1-64 of [A-Za-z0-9_.-], not starting with '.' */
#define COVE_TEMPLATE_STEPS_MAX 64   /* --run and --put steps */
#define COVE_TEMPLATE_RUN_MAX   4096 /* bytes of one --run command line */
#define COVE_TEMPLATE_FILE      "template.json"

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

/* Fills s from cfg (vmm, kernel, image made absolute; cpus, memory, disk
 * size with their defaults) under name, without steps. */
int cove_template_spec_init(struct cove_template_spec *s, const char *name,
                            const struct cove_config *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The base template of cfg's image: cove_template_spec_init under the
 * name base-<image>-<cpus>x<memory>[-d<disk>][-net]-<8 hex of the paths>. */
int cove_template_base_spec(struct cove_template_spec *s, const struct cove_config *cfg, int net,
                            char *err, size_t errlen) __attribute__((warn_unused_result));

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

/* Where a build's progress and its steps' output go (all may be NULL):
 * note gets one line per event ("building ...", "inputs changed ..."). */
struct cove_template_io {
	void (*note)(void *opaque, const char *line);
	cove_output_fn on_stdout, on_stderr;
	void *opaque;
};

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
