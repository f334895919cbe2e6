/* A template's spec and its manifest, template.json (template_manifest.c):
 * the steps, the JSON text and its checks, the inputs hash.  Pure: no
 * store, no sandbox. */
#ifndef COVE_TEMPLATE_MANIFEST_H
#define COVE_TEMPLATE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/base/cove_types.h"
#include "lib/base/sha256.h"

#define COVE_TEMPLATE_NAME_MAX  64   /* 1-64 of [A-Za-z0-9_.-], not starting with '.' */
#define COVE_TEMPLATE_STEPS_MAX 64   /* --run and --put steps */
#define COVE_TEMPLATE_RUN_MAX   4096 /* bytes of one --run command line */

enum { COVE_TEMPLATE_NET_OFF, COVE_TEMPLATE_NET_NONE, COVE_TEMPLATE_NET_OPEN };

#define COVE_TEMPLATE_SRCS_MAX  64   /* source patterns of one COPY */
#define COVE_TEMPLATE_READY_MAX 3600 /* seconds a ready check may take */

/* Steps.  RUN, PUT and COPY change the guest (each one's result is cached
 * by its key); ENV, WORKDIR and USER change the defaults of later RUNs and
 * of every exec in sandboxes from the template; ARG only later RUNs'. */
enum cove_template_step_kind {
	COVE_STEP_RUN,
	COVE_STEP_PUT,
	COVE_STEP_COPY,
	COVE_STEP_ENV,
	COVE_STEP_WORKDIR,
	COVE_STEP_USER,
	COVE_STEP_ARG,
	COVE_STEP_CMD,        /* run = a JSON array of strings: the recorded Cmd */
	COVE_STEP_ENTRYPOINT, /* the same for Entrypoint */
};

struct cove_template_step {
	enum cove_template_step_kind kind;
	char *run;    /* RUN: a command line for /bin/sh -c; ENV, ARG: "K=V"; WORKDIR: an
	                 absolute path; USER: "user[:group]" */
	char *local;  /* PUT: the local file; COPY: the context folder, or a tar archive
	                 (absolute) */
	char *guest;  /* PUT, COPY: where it goes in the guest (absolute; a COPY's ends with
	                 '/' for "into this folder") */
	char **srcs;  /* COPY from a folder: patterns relative to it ("" is all of it) */
	size_t nsrcs; /* 0 for a COPY from a tar archive: all of it goes under guest */
	char *chown;  /* COPY: "user[:group]" or NULL (root) */
};

/* What sandboxes from a template start with (the image's config, then the
 * steps'): an output of the build, recorded in template.json. */
struct cove_template_config {
	char **env; /* "K=V" */
	size_t nenv;
	char *workdir, *user;     /* NULL: unset */
	char **entrypoint, **cmd; /* NULL-terminated; recorded, never run by Cove */
	char image_digest[80];    /* the source image's manifest digest, "" when none */
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
	char *from;                   /* an image reference (lib/image/oci.h) the root file system
	                        is made from, or NULL: image is the root file system */
	char *from_template;          /* a template the build restores instead of a cold boot */
	char *agent;                  /* with from: the cove-agent put in as /.cove/cove-agent */
	char *start_cmd;              /* runs (detached) before the snapshot, or NULL */
	char *ready_cmd;              /* start_cmd is ready when this exits 0 ... */
	unsigned int ready_port;      /* ... or when this guest TCP port accepts */
	unsigned int ready_timeout_s; /* 0: 60 */
};

/* A template.json: its spec, the inputs hash it was built with, when. */
struct cove_template_manifest {
	struct cove_template_spec spec;
	char inputs_hash[SHA256_HEX];
	int64_t created; /* Unix seconds */
	struct cove_template_config config;
};

/* Where a build's progress and its steps' output go (all may be NULL):
 * note gets one line per event ("building ...", "inputs changed ..."). */
struct cove_template_io {
	void (*note)(void *opaque, const char *line);
	cove_output_fn on_stdout, on_stderr;
	void *opaque;
	unsigned int step_timeout_s; /* a RUN is killed after this long; 0: 1800 */
	int64_t deadline_ms;         /* mono_ms() by which every RUN ends; 0: none */
};

#define COVE_TEMPLATE_STEP_TIMEOUT_S 1800

/* The cove-agent an imported image gets: $COVE_AGENT, else the one
 * beside s->vmm. */
int cove_template_set_agent(struct cove_template_spec *s, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* One line of a build's progress to io->note (io or its note may be NULL). */
void template_note(const struct cove_template_io *io, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void cove_template_spec_free(struct cove_template_spec *s);
void cove_template_config_free(struct cove_template_config *c);
void cove_template_manifest_free(struct cove_template_manifest *m);

/* Whether name is a valid template name. */
bool cove_template_name_valid(const char *name);

/* Appends a step (strings copied; a PUT's local path made absolute).
 * -EINVAL (message) for a bad or over-long step or too many of them. */
int cove_template_add_run(struct cove_template_spec *s, const char *cmd, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int cove_template_add_put(struct cove_template_spec *s, const char *local, const char *guest,
                          char *err, size_t errlen) __attribute__((warn_unused_result));

/* Appends an ENV, ARG ("K=V"), WORKDIR (absolute), USER, CMD or
 * ENTRYPOINT (a JSON array of strings) step, or a RUN. */
int cove_template_add_step(struct cove_template_spec *s, enum cove_template_step_kind kind,
                           const char *arg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Appends a COPY of the patterns srcs (relative, globs allowed; "" or "."
 * is everything) from the folder context to dest, owned by chown
 * ("user[:group]", NULL: root). */
int cove_template_add_copy(struct cove_template_spec *s, const char *context,
                           const char *const *srcs, size_t nsrcs, const char *dest,
                           const char *chown, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Appends a COPY of everything in the tar archive tar (plain or
 * compressed) under the folder dest. */
int cove_template_add_copy_archive(struct cove_template_spec *s, const char *tar, const char *dest,
                                   const char *chown, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Sets a string field of s (from, from_template, start_cmd, ready_cmd),
 * checked: 1 to COVE_TEMPLATE_RUN_MAX bytes. */
int cove_template_set(struct cove_template_spec *s, char **field, const char *value, char *err,
                      size_t errlen) __attribute__((warn_unused_result));

/* The inputs hash from the hashes already known (hex): vmm, kernel, the
 * base (the image file's content hash, or what names an imported image or
 * a parent template), then one per PUT and COPY step, in order: the pure
 * half of cove_template_hash.  keys (NULL, or nsteps entries) gets each
 * step's key: the hash of the one before it and of the step; a RUN, PUT
 * or COPY's result is cached under it. */
void template_hash_inputs(const struct cove_template_spec *s, const char *vmm, const char *kernel,
                          const char *image, const char *const *puts, char (*keys)[SHA256_HEX],
                          char hex[SHA256_HEX]);

/* The content hash of an open file: its size, then every 4 KiB block that
 * is not all zeros with its index, so a sparse copy hashes as the file. */
int template_file_hash(int fd, char hex[SHA256_HEX]) __attribute__((warn_unused_result));

#endif
