/* cove-vmm --pool CPUS --api PATH: a pre-spawned VMM (docs/pool.md).  main() has made the KVM VM, its vCPUs and I/O loop
 * (vm_prepare) and bound the control socket; this waits there for the one
 * owner connection and its one start request:
 *
 *   VMM -> owner  {"ok":true,"pool":"ready","cpus":N}
 *   owner -> VMM  {"op":"start","argv":["--restore","DIR",...]}   (one line;
 *                 at most one fd may ride on it, SCM_RIGHTS: the TAP that
 *                 --net fd=N names)
 *   VMM -> owner  {"ok":true} once the guest runs, or {"ok":false,"error":"..."}
 *                 and the VMM exits 1
 *
 * argv holds the flags a spawned cove-vmm would get (a restore or a cold
 * boot), parsed by vmm_config_parse as if from the command line.  An owner
 * that closes the connection before a request ends the VMM (exit 0): a
 * member dies with the pool that made it. */
#ifndef COVE_VMM_POOL_H
#define COVE_VMM_POOL_H

#include <stddef.h>

#define VMM_POOL_ARGS_MAX  64
#define VMM_POOL_LINE_MAX  (64 << 10)
#define VMM_POOL_ACCEPT_MS 30000 /* the owner connects within this after the spawn */

struct vmm_pool_req {
	int conn;   /* the owner's connection; -1: none */
	int passed; /* an fd that came with the request, or -1 */
	void *doc;  /* the parsed request; argv's strings point into it */
	int argc;
	char *argv[VMM_POOL_ARGS_MAX + 2];
};

/* Accepts the owner on the listening socket lfd, says ready, and reads the
 * start request into req.  0: a request; 1: the owner went away (exit
 * quietly); -errno with err: a bad or missing request (the owner was told). */
int vmm_pool_wait(int lfd, unsigned int cpus, struct vmm_pool_req *req, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Parses one request line (NUL-terminated) into req->doc and argv.  Pure,
 * for tests and fuzzing: 0, or -EINVAL with a one-line message in err. */
int vmm_pool_parse(const char *line, struct vmm_pool_req *req, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Answers the request: {"ok":true} when error is NULL, else the error line. */
void vmm_pool_reply(struct vmm_pool_req *req, const char *error);

void vmm_pool_req_free(struct vmm_pool_req *req);

#endif
