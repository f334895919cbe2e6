/* Template build bodies (template_body.c): coved's own POST /templates and
 * what the e2b SDK's Template.build sends (POST /v3/templates, then POST
 * /v2/templates/{templateID}/builds/{buildID}), hostile JSON checked into
 * a struct coved_build_req (tests/fuzz/fuzz_coved_json.c). */
#ifndef COVED_API_TEMPLATE_BODY_H
#define COVED_API_TEMPLATE_BODY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/sandboxes/build_req.h"

#define COVED_E2B_ENV_MAX 256 /* variables of one ENV step */

/* coved_parse_template() - POST /templates: {name, from | from_template,
 * steps: [{run} | {env: {K: V}} | {workdir} | {user} | {copy: {files, src,
 * dest, chown}}], start_cmd, ready_cmd | ready_port, ready_timeout_s, cpus,
 * memory_mib, disk_mib, force}.  out is zeroed first.
 * Return: 0, or -EINVAL with a one-line message naming the field (free
 * out with coved_build_req_free() either way). */
int coved_parse_template(json_t *o, struct coved_build_req *out, char *err, size_t errlen);

/* coved_parse_e2b_request() - POST /v3/templates: {name (or alias), tags,
 * cpuCount, memoryMB, minFreeDiskMb}: the name, CPUs and memory into out
 * (zeroed first).  A "name:tag" or tags are refused: coved keeps one build
 * per name.  Return: 0 or -EINVAL with a message. */
int coved_parse_e2b_request(json_t *o, struct coved_build_req *out, char *err, size_t errlen);

/* coved_parse_e2b_build() - POST /v2/templates/{id}/builds/{id}'s
 * TemplateBuildStartV2: {fromImage | fromTemplate, startCmd, readyCmd,
 * force, steps: [{type, args, filesHash, force, ...}]} into out, whose
 * name, cpus and memory (from the request) stay.  RUN [cmd, user?], ENV
 * [k, v, k, v...], WORKDIR [path], USER [user], COPY [src, dest, user?,
 * mode?] with filesHash; a RUN's own user becomes USER steps around it, a
 * COPY's relative dest is taken from the last WORKDIR and its owner is
 * the last USER when it names none, as E2B's builder does.
 * Return: 0 or -EINVAL with a message naming the step. */
int coved_parse_e2b_build(json_t *o, struct coved_build_req *out, char *err, size_t errlen);

#endif
