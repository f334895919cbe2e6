/* envd's request bodies (the e2b SDK's process.proto and filesystem.proto
 * messages in protobuf's JSON mapping), parsed and validated without side
 * effects; base64 for bytes fields; guest paths.  Pure (fuzzed by
 * fuzz_envd_json). */
#ifndef COVED_ENVD_MESSAGES_H
#define COVED_ENVD_MESSAGES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENVD_HOME     "/root" /* relative paths start here, whatever the user */
#define ENVD_ARGS_MAX 4096
#define ENVD_ENVS_MAX 4096
#define ENVD_TAG_MAX  256
#define ENVD_PATH_MAX 4096

/* Parses a request message: one JSON object, duplicate keys refused, at
 * most len bytes.  *out is a new reference.  -EPROTO with a reason. */
int envd_json(const uint8_t *msg, size_t len, json_t **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));

struct envd_start {
	const char **argv; /* cmd then args, NULL-terminated; strings owned by json */
	char **env;        /* "K=V", NULL-terminated, malloc'ed */
	const char *cwd;   /* NULL: the default */
	const char *tag;   /* NULL: none */
	bool stdin_open, pty;
	uint16_t rows, cols;
};
/* StartRequest {process: {cmd, args, envs, cwd}, pty?: {size: {cols, rows}},
 * tag?, stdin?} from o (which must outlive *s). */
int envd_parse_start(const json_t *o, struct envd_start *s, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void envd_start_free(struct envd_start *s);

/* ProcessSelector {pid} or {tag} under o's "process": *pid set (> 0), or
 * *tag (then *pid is 0). */
int envd_parse_selector(const json_t *o, int *pid, const char **tag, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* SendInputRequest's input {stdin | pty: base64}: *data malloc'ed (may be
 * NULL for no bytes). */
int envd_parse_input(const json_t *o, uint8_t **data, size_t *len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* SendSignalRequest's signal: "SIGNAL_SIGKILL", "SIGNAL_SIGTERM", or the
 * numbers 9, 15. */
int envd_parse_signal(const json_t *o, int *sig, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* UpdateRequest's pty.size {cols, rows}: 0 with both 1-65535, 1 when no pty
 * member is there. */
int envd_parse_size(const json_t *o, uint16_t *rows, uint16_t *cols, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* A string member that names a guest path, resolved: absolute as is,
 * relative (and "~/...") under ENVD_HOME; "." and ".." components folded
 * lexically.  out gets at most ENVD_PATH_MAX bytes. */
int envd_parse_path(const json_t *o, const char *key, char *out, size_t outlen, char *err,
                    size_t errlen) __attribute__((warn_unused_result));
int envd_resolve_path(const char *in, char *out, size_t outlen) __attribute__((warn_unused_result));

/* WatchDirRequest and CreateWatcherRequest {path, recursive, includeEntry,
 * allowNetworkMounts}: the folder resolved into path (envd_parse_path),
 * *recursive.  includeEntry and allowNetworkMounts are accepted and not
 * acted on (docs/e2b-compat.md). */
int envd_parse_watch(const json_t *o, char *path, size_t pathlen, bool *recursive, char *err,
                     size_t errlen) __attribute__((warn_unused_result));
/* GetWatcherEventsRequest and RemoveWatcherRequest {watcherId}: *id (owned
 * by o) 1..ENVD_WATCHER_ID_MAX of [a-z0-9]. */
#define ENVD_WATCHER_ID_MAX 32
int envd_parse_watcher_id(const json_t *o, const char **id, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The guest user of an envd request, as the e2b SDK sends it (envd
 * 0.4.0 and later): the "username" query parameter on /files, HTTP Basic
 * auth "Basic base64(user:)" on the RPCs (authorization: the header's
 * value; either may be NULL).  1 with the name in out (at most
 * COVE_USER_MAX bytes, cove_user_valid, no ':'), 0 when there is none (no
 * header, another scheme, an empty name), -EINVAL for a malformed one. */
int envd_user(const char *username, const char *authorization, char *out, size_t outlen)
    __attribute__((warn_unused_result));

/* Base64 (standard or URL-safe alphabet, padding optional, as protobuf's
 * JSON mapping allows): decode gives malloc'ed bytes (-EINVAL for bad
 * input); encode gives a malloc'ed NUL-terminated string. */
int envd_b64_decode(const char *in, size_t inlen, uint8_t **out, size_t *outlen)
    __attribute__((warn_unused_result));
char *envd_b64_encode(const uint8_t *in, size_t len);

#endif
