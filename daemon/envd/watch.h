/* filesystem.Filesystem's watches (watch.c): WatchDir, a server stream of
 * the agent's PROTO_WATCH events, and the polled watchers of
 * CreateWatcher / GetWatcherEvents / RemoveWatcher, each an agent watch
 * coved holds open between calls. */
#ifndef COVED_ENVD_WATCH_H
#define COVED_ENVD_WATCH_H

#include <jansson.h>
#include <microhttpd.h>

#include "daemon/envd/rpc.h"

#define ENVD_WATCHERS_MAX    256    /* polled watchers coved holds, all sandboxes */
#define ENVD_WATCHER_IDLE_MS 600000 /* one not polled this long is dropped */
#define ENVD_WATCH_BATCH     1024   /* events one GetWatcherEvents returns at most */

enum MHD_Result envd_fs_watch_dir(struct envd_req *r, struct MHD_Connection *c, json_t *body);
int envd_fs_create_watcher(struct envd_req *r, struct MHD_Connection *c, json_t *body,
                           json_t **reply, const char **code, char *msg, size_t msglen);
int envd_fs_watcher_events(struct envd_req *r, struct MHD_Connection *c, json_t *body,
                           json_t **reply, const char **code, char *msg, size_t msglen);
int envd_fs_remove_watcher(struct envd_req *r, struct MHD_Connection *c, json_t *body,
                           json_t **reply, const char **code, char *msg, size_t msglen);

/* Closes every polled watcher (coved's exit). */
void envd_watchers_fini(void);

#endif
