/* A template build as the API asked for it (build_req.c): checked at the
 * edge (daemon/api/template_body.c) into this typed request, which the
 * build jobs (builds.c) turn into a lib/template spec. */
#ifndef COVED_SANDBOXES_BUILD_REQ_H
#define COVED_SANDBOXES_BUILD_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "daemon/conf/keys.h"

#define COVED_BUILD_NAME_MAX  64   /* a template's name: [A-Za-z0-9_-], as a templateID */
#define COVED_BUILD_STEPS_MAX 64   /* steps of one build (lib/template's bound) */
#define COVED_BUILD_ARG_MAX   4096 /* bytes of one command, path or user */
#define COVED_BUILD_FROM_MAX  1024 /* bytes of an image reference */
#define COVED_FILES_HASH_LEN  64   /* an uploaded archive's name: 64 of [0-9a-f] */
#define COVED_BUILD_STORE_LEN 26   /* "t." and 24 hex */
#define COVED_BUILD_ID_LEN    36   /* a UUID (E2B's buildID) */

enum coved_bstep_kind {
	COVED_BSTEP_RUN,     /* arg: a command for /bin/sh -c */
	COVED_BSTEP_ENV,     /* arg: "K=V" */
	COVED_BSTEP_WORKDIR, /* arg: an absolute path */
	COVED_BSTEP_USER,    /* arg: "user[:group]" */
	COVED_BSTEP_COPY,    /* files, src, dest, chown */
};

struct coved_bstep {
	enum coved_bstep_kind kind;
	char *arg;
	char files[COVED_FILES_HASH_LEN + 1]; /* COPY: the uploaded archive */
	char *src;                            /* COPY: a path in the archive ("." all of it) */
	char *dest;                           /* COPY: absolute; ends in '/' for "into" */
	char *chown;                          /* COPY: "user[:group]" or NULL (root) */
	char mode[5];                         /* COPY: octal mode of what it copies, or "" */
};

/* Every string malloc'ed; coved_build_req_free() frees them. */
struct coved_build_req {
	char name[COVED_BUILD_NAME_MAX + 1];
	char *from;          /* an image reference, or NULL */
	char *from_template; /* a template name, or NULL (exactly one of the two) */
	struct coved_bstep *steps;
	size_t nsteps;
	char *start_cmd, *ready_cmd; /* or NULL */
	unsigned int ready_port, ready_timeout_s;
	unsigned int cpus;   /* 0: coved's default */
	uint64_t memory_mib; /* 0: coved's default */
	uint64_t disk_mib;   /* 0: the image's */
	bool force;          /* build every step again, cached or not */
};

void coved_build_req_free(struct coved_build_req *r);

/* coved_build_req_add() - appends a step (strings copied; src, dest and
 * chown only for a COPY, chown may be NULL).  -EINVAL with a message
 * past COVED_BUILD_STEPS_MAX, -ENOMEM. */
int coved_build_req_add(struct coved_build_req *r, enum coved_bstep_kind kind, const char *arg,
                        const char *files, const char *src, const char *dest, const char *chown,
                        char *err, size_t errlen) __attribute__((warn_unused_result));

/* Whether s is a COPY's mode: 3 or 4 octal digits. */
bool coved_build_mode_ok(const char *s);

/* Whether s is a template name the API takes: 1 to 64 of [A-Za-z0-9_-],
 * not starting with "snap-". */
bool coved_build_name_ok(const char *s);

/* The kind's name as the API and logs say it ("RUN", "COPY", ...). */
const char *coved_bstep_name(enum coved_bstep_kind kind);

/* coved_build_store_name() - the store name of tenant's template name:
 * "t." and 24 hex of SHA-256(tenant, NUL, name).  A templateID never
 * holds a dot, so no create names it but through its tenant's build. */
void coved_build_store_name(const char *tenant, const char *name,
                            char out[COVED_BUILD_STORE_LEN + 1]);

/* A build's record file as coved reads it back at start-up. */
struct coved_build_record {
	char tenant[COVED_TENANT_LEN + 1];
	char name[COVED_BUILD_NAME_MAX + 1];
	char store[COVED_BUILD_STORE_LEN + 1];
	char id[COVED_BUILD_ID_LEN + 1];
	char reason[300];
	int64_t created_ms, finished_ms;
	bool ready;   /* else an error */
	bool built;   /* the store holds a template of it */
	bool running; /* it was building when coved stopped */
};

/* coved_build_record_parse() - the record o read from builds/<file> into
 * r: every field checked, and file must be the name its tenant and name
 * make (a record copied under another name is not taken).  Pure; run by
 * fuzz_coved_json.  Return: 0 or -EINVAL. */
int coved_build_record_parse(const json_t *o, const char *file, struct coved_build_record *r)
    __attribute__((warn_unused_result));

#endif
