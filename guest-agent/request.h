/* Requests from the host, parsed and validated without side effects: the
 * layer between the frame codec and the handlers, and what the fuzzer drives.
 * The schemas are in docs/protocol.md. */
#ifndef COVE_AGENT_REQUEST_H
#define COVE_AGENT_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define AGENT_DEFAULT_ROWS 24
#define AGENT_DEFAULT_COLS 80

#define AGENT_SEED_BYTES 32

/* A RESTORED notice (docs/protocol.md), as the request parser validated it:
 * what makes one fork of a snapshot unlike its siblings. */
struct agent_restore_req {
	uint64_t time_ns;       /* the host's CLOCK_REALTIME, 1 .. INT64_MAX */
	const char *hostname;   /* agent_hostname_valid() */
	const char *sandbox_id; /* 1-64 of [A-Za-z0-9._-] */
	uint8_t seed[AGENT_SEED_BYTES];
};

struct agent_exec_req {
	const char **argv; /* NULL-terminated; strings owned by the request's JSON */
	/* Environment overrides, NULL-terminated: "KEY=VALUE" sets, a bare
	 * "KEY" (JSON null) removes a default.  Array and strings malloc'ed. */
	char **env;
	const char *cwd;     /* NULL: the defaults' cwd, else the user's home, else "/" */
	const char *user;    /* NULL: the defaults' user; agent_user_spec_valid() */
	int64_t uid, gid;    /* -1: the agent's own (older hosts; "user" wins) */
	uint64_t timeout_ms; /* 0: none */
	bool pty;
	bool stdin_open; /* false: stdin is /dev/null (ignored with a pty) */
	uint16_t rows, cols;
};

struct agent_req {
	uint16_t type;
	uint32_t id;
	json_t *json; /* the parsed payload of a JSON type; NULL for raw types */
	union {
		struct agent_exec_req exec;
		struct {
			const char *path;
			uint32_t mode;
			int64_t uid, gid; /* -1: leave as created */
			const char *user; /* NULL: none; else its uid and gid win */
		} put;
		struct {
			const char *path; /* FILE_GET, STAT, LIST */
		} file;
		struct {
			const char *path;
			uint32_t mode;
			bool parents;
			int64_t uid, gid;   /* -1: leave as created */
			const char *user;   /* NULL: none; else its uid and gid win */
			bool keep_existing; /* an existing last folder keeps its owner */
		} mkdir;
		struct {
			const char *path, *target; /* SYMLINK: path absolute */
			int64_t uid, gid;          /* -1: leave as created */
			const char *user;          /* NULL: none; else its uid and gid win */
		} symlink;
		/* DEFAULTS: env "K=V" (NULL-terminated, malloc'ed like an exec's;
		 * NULL when absent), cwd and user NULL when absent. */
		struct {
			char **env;
			const char *cwd, *user;
		} defaults;
		struct {
			const char *spec; /* USER: agent_user_spec_valid() */
		} user;
		struct {
			const char *path;
			bool recursive;
		} remove;
		struct {
			int sig;
		} signal;
		struct {
			uint16_t rows, cols;
		} resize;
		struct agent_restore_req restored;
		/* Detached processes (types 40-46): the members each type uses. */
		struct {
			int32_t pid;         /* 1 .. INT32_MAX */
			uint64_t offset;     /* PROC_ATTACH: first output byte wanted */
			int sig;             /* PROC_SIGNAL */
			uint16_t rows, cols; /* PROC_RESIZE */
			const uint8_t *data; /* PROC_INPUT: borrowed from the payload */
			size_t len;
		} proc;
		struct {
			const char *from, *to; /* MOVE */
		} move;
		struct {
			const char *path; /* WATCH: the folder */
			bool recursive;
		} watch;
		struct {
			uint32_t timeout_ms; /* FREEZE */
		} freeze;
		struct {
			uint16_t port;       /* PORT: 1-65535 */
			uint32_t timeout_ms; /* to connect: AGENT_PORT_TIMEOUT_* */
		} port;
	} u;
	/* PROC_START: u.exec, plus the caller's label (NULL: none). */
	const char *tag;
};

/* PORT's connect deadline: default and most, in milliseconds. */
#define AGENT_PORT_TIMEOUT_DEFAULT 2000
#define AGENT_PORT_TIMEOUT_MAX     60000

#define AGENT_TAG_MAX 256 /* bytes of a PROC_START "tag" */
/* DEFAULTS' bounds: variables, and bytes of one value. */
#define AGENT_DEFAULTS_ENV_MAX   256
#define AGENT_DEFAULTS_VALUE_MAX (32 * 1024)

/* Parses one frame received from the host into *req (zeroed first).  Types
 * only the agent sends (HELLO, PONG, STARTED, STDOUT, STDERR, EXIT, OK) and
 * payloads that break their schema are -EPROTO with a reason in err; -ENOMEM.
 * Raw types (STDIN, DATA) are accepted as they are: the payload stays with
 * the caller.  Pair every call with agent_req_free(), whatever it returned. */
int agent_req_parse(const struct proto_hdr *h, const uint8_t *payload, struct agent_req *req,
                    char *err, size_t errlen) __attribute__((warn_unused_result));
void agent_req_free(struct agent_req *req);

/* True for a usable path in a request: absolute, shorter than PATH_MAX. */
bool agent_path_valid(const char *path);

#endif
