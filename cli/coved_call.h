/* One HTTP request to coved on its Unix socket (libcurl), for the CLI's
 * commands that talk to coved: cove cluster, cove bench create. */
#ifndef COVE_CLI_COVED_CALL_H
#define COVE_CLI_COVED_CALL_H

#include <stddef.h>

#define CLI_COVED_CALL_MS    10000      /* a call's deadline, unless given */
#define CLI_COVED_ANSWER_MAX (8u << 20) /* bytes of an answer kept */

/* An answer's body, NUL-terminated (the caller frees p). */
struct cli_answer {
	char *p;
	size_t len;
};

/* A request beyond cli_coved_call()'s: more headers (NULL-terminated, or
 * NULL), a body of len bytes (may hold NULs; NULL: none) and a deadline
 * (0: CLI_COVED_CALL_MS). */
struct cli_coved_req {
	const char *method, *path;
	const char *const *headers;
	const void *body;
	size_t len;
	unsigned int timeout_ms;
};

/* cli_coved_call() - one JSON request (body NULL: none) with the API key
 * key; *status and *a on an answer of any status.
 * Return: 0, or -errno with err when coved could not be asked. */
int cli_coved_call(const char *sock, const char *key, const char *method, const char *path,
                   const char *body, long *status, struct cli_answer *a, char *err, size_t errlen);

/* cli_coved_request() - as cli_coved_call(), any request; key NULL: no
 * X-API-KEY header. */
int cli_coved_request(const char *sock, const char *key, const struct cli_coved_req *q,
                      long *status, struct cli_answer *a, char *err, size_t errlen);

#endif
