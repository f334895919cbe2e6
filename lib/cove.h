/* libcove: the host-side C API for embedding Cove sandboxes.
 *
 * A sandbox is one cove-vmm child process running a microVM whose PID 1 is
 * cove-agent.  Typical use:
 *
 *   struct cove_config cfg;
 *   cove_config_defaults(&cfg);           // kernel, image, vmm found beside libcove's binary
 *   cfg.memory_mib = 512;
 *   struct cove_sandbox *sb;
 *   if (cove_start(&cfg, &sb, err, sizeof(err)) < 0) ...   // returns once the agent answered
 *   struct cove_exec_result res;
 *   cove_exec(sb, &opts, &res);           // output through callbacks
 *   cove_put_file(sb, "local.txt", "/root/x.txt", 0644);
 *   cove_stop(sb);                        // guest shuts down, VMM reaped, files removed
 *   cove_free(sb);
 *
 * All functions return 0 or a negative errno; those taking err/errlen also
 * leave a one-line message there.  A sandbox may be used from several
 * threads at once (each call opens its own agent connection). */
#ifndef COVE_H
#define COVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/agent/agent_client.h"
#include "lib/agent/exec.h"
#include "lib/agent/notice.h"
#include "lib/agent/port.h"
#include "lib/agent/proc.h"
#include "lib/agent/watch.h"
#include "lib/base/cove_types.h"
#include "lib/base/handle.h"
#include "lib/base/jail.h"
#include "lib/config.h"
#include "lib/diff.h"
#include "lib/lookup.h"
#include "lib/net/net_addr.h"
#include "lib/net/net_ctl.h"
#include "lib/net/net_pool.h"
#include "lib/proxy.h"
#include "lib/restore.h"
#include "lib/sandbox.h"
#include "lib/snapshot.h"
#include "lib/usage.h"
#include "lib/vmm/limits.h"
#include "lib/vmm/memcache.h"
#include "lib/vmm/pool.h"
#include "lib/vmm/vmm_api.h"

/* Declared in their modules' headers, which this file includes:
 *   cove_config_defaults, cove_image_path: lib/config.h; cove_start,
 *     cove_stop, cove_free: lib/sandbox.h; cove_snapshot: lib/snapshot.h;
 *     cove_net_proxy: lib/proxy.h;
 *   cove_sandbox_dir, cove_vmm_pid, cove_name_valid, cove_sandbox_name:
 *     lib/base/handle.h; cove_confinement: lib/base/jail.h;
 *   cove_exec, cove_set_exec_defaults: lib/agent/exec.h;
 *     cove_put_file(_owned), cove_get_file(_max), cove_mkdir, cove_symlink,
 *     cove_user_valid, cove_user_lookup, cove_ping: lib/agent/agent_client.h; cove_agent_restored:
 *     lib/agent/notice.h; detached processes and file requests:
 *     lib/agent/proc.h; folder watches (cove_watch_*): lib/agent/watch.h; ports (cove_port_open):
 *     lib/agent/port.h;
 *   cove_sandbox_exited: lib/vmm/limits.h; cove_vmm_stats:
 *     lib/vmm/vmm_api.h; cove_memcache_prune: lib/vmm/memcache.h; the VMM
 *     pool (cove_vmm_pool_*): lib/vmm/pool.h;
 *   cove_net_set, cove_net_probe: lib/net/net_ctl.h; cove_net_mode_name:
 *     lib/net/net_addr.h; the network pool (cove_net_pool_*):
 *     lib/net/net_pool.h;
 *   cove_open, cove_list, cove_state_name: lib/lookup.h; cove_restore:
 *     lib/restore.h; cove_usage: lib/usage.h; cove_diff: lib/diff.h. */

/* ---- Named sandboxes, the registry, snapshots -------------------------- */

/* Every sandbox has an entry in the runtime directory ($COVE_RUNTIME_DIR,
 * $XDG_RUNTIME_DIR/cove, /run/cove for root, else /tmp/cove-<uid>): the
 * directory <base>/<name>/ with its meta.json, sockets, disk overlay and
 * logs.  Any process of the same user finds a sandbox there by name.
 *
 * cove_config.name: 1 to COVE_NAME_MAX of [A-Za-z0-9_.-], not starting
 * with '.'; cove_start fails with -EEXIST ("sandbox NAME already exists")
 * when the name is taken.  cove_config.detached: cove-vmm is started in a
 * session of its own, not tied to this process (no parent-death signal),
 * and cove_free only releases the handle.  COVE_NAME_MAX is in
 * lib/base/cove_types.h. */

#endif
