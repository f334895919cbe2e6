/* File requests (files.c, docs/protocol.md): FILE_PUT, FILE_GET, STAT,
 * LIST, MKDIR, SYMLINK, REMOVE. */
#ifndef COVE_AGENT_FILES_H
#define COVE_AGENT_FILES_H

#include "conn.h"
#include "request.h"

/* Request handlers: 0 when the request was answered (OK or ERROR) and the
 * connection goes on, negative errno when it must close. */
int agent_file_put(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_file_get(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_stat(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_list(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_mkdir(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_symlink(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
/* USER: a user spec resolved (users.h) -> {"uid", "gid", "groups", "home"}. */
int agent_user(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));
int agent_remove(struct agent_conn *c, const struct agent_req *req)
    __attribute__((warn_unused_result));

#endif
