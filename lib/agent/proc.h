/* Detached processes and file requests (proc.c; part of cove.h's API),
 * for coved's envd surface (docs/protocol.md "Detached processes").  A
 * detached process belongs to the guest agent: it outlives the connection
 * that started it (and the host process).  Every call has a deadline:
 * AGENT_STEP_MS per step unless it says otherwise. */
#ifndef COVE_LIB_AGENT_PROC_H
#define COVE_LIB_AGENT_PROC_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/cove_types.h"

struct json_t;

/* Starts a detached process: 0 with *pid, or -errno (the guest's errno for
 * a program that cannot run, with its message). */
int cove_proc_start(struct cove_sandbox *sb, const struct cove_proc_spec *spec, int *pid, char *err,
                    size_t errlen) __attribute__((warn_unused_result));

/* Attaches to process pid: returns a connection fd (the caller closes it;
 * closing it leaves the process running) with *first the output offset the
 * stream starts at (> offset when older output left the agent's ring).
 * -ESRCH: no such process (ended ones are kept for 10 minutes). */
int cove_proc_attach(struct cove_sandbox *sb, int pid, uint64_t offset, uint64_t *first, char *err,
                     size_t errlen) __attribute__((warn_unused_result));

/* The next event of an attach: waits up to wait_ms for one to begin
 * (COVE_PROC_IDLE when none did: call again), then AGENT_STEP_MS for the
 * rest of its frame.  -errno when the attach broke (close the fd). */
int cove_proc_next(int fd, int wait_ms, struct cove_proc_event *ev, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Input to a process's stdin (any length: sent in frames); -EPIPE when its
 * stdin is closed, -ESRCH when there is no such process. */
int cove_proc_input(struct cove_sandbox *sb, int pid, const void *data, size_t len, char *err,
                    size_t errlen) __attribute__((warn_unused_result));
int cove_proc_close_stdin(struct cove_sandbox *sb, int pid, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* To its process group; -ESRCH when it has ended or is unknown. */
int cove_proc_signal(struct cove_sandbox *sb, int pid, int sig, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int cove_proc_resize(struct cove_sandbox *sb, int pid, uint16_t rows, uint16_t cols, char *err,
                     size_t errlen) __attribute__((warn_unused_result));
/* *procs: the agent's {"procs": [...]} array as it sent it (a new reference;
 * every member type-checked by the caller). */
int cove_proc_list(struct cove_sandbox *sb, struct json_t **procs, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* One control request (STAT, LIST, MKDIR, REMOVE, MOVE, ...; req consumed)
 * answered by OK: *reply is its object (a new reference; NULL allowed). */
int cove_agent_call(struct cove_sandbox *sb, uint16_t type, struct json_t *req,
                    struct json_t **reply, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The same with the answer's deadline reply_ms from now (cove_agent_call:
 * AGENT_STEP_MS), for requests whose work grows with the guest's, as SYNC's
 * writeback of a build step's files. */
int cove_agent_call_ms(struct cove_sandbox *sb, uint16_t type, struct json_t *req,
                       struct json_t **reply, int64_t reply_ms, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Streaming upload: begin (FILE_PUT, returns the fd), data (any length,
 * in frames, each within a step), end (the empty DATA and the OK, which
 * can take FILE_SYNC long; closes fd).  Abandoning a put: close the fd
 * (the agent removes its temporary file). */
int cove_put_begin(struct cove_sandbox *sb, const char *guest, uint32_t mode, char *err,
                   size_t errlen) __attribute__((warn_unused_result));
/* cove_put_begin with the file's owner: user (as cove_exec_opts' user,
 * resolved in the guest; NULL: root) gets it. */
int cove_put_begin_as(struct cove_sandbox *sb, const char *guest, uint32_t mode, const char *user,
                      char *err, size_t errlen) __attribute__((warn_unused_result));
int cove_put_data(int fd, const void *data, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int cove_put_end(int fd, uint64_t *size, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Streaming download: begin (FILE_GET and its OK; *size from the guest's
 * stat, returns the fd), then next: one DATA frame (malloc'ed, *len 0 at the
 * end), within a step each.  The caller closes fd. */
int cove_get_begin(struct cove_sandbox *sb, const char *guest, uint64_t *size, char *err,
                   size_t errlen) __attribute__((warn_unused_result));
int cove_get_next(int fd, uint8_t **data, uint32_t *len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
