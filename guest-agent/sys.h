/* The guest system around the agent: what PID 1 sets up before serving. */
#ifndef COVE_AGENT_SYS_H
#define COVE_AGENT_SYS_H

#include <stdbool.h>
#include <stddef.h>

#define AGENT_DEFAULT_HOSTNAME "cove"
#define AGENT_PATH             "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* Tells cove-vmm's boot timer that user space runs (one port write).  Call
 * first thing; without port access (not in a Cove VM, not root) it does
 * nothing. */
void agent_boot_poke(void);

/* Finds the last "key=value" word of a kernel command line (double quotes
 * around a value are removed) and copies the value to out.  0, -ENOENT, or
 * -ENAMETOOLONG when it does not fit in outlen (with the NUL). */
int agent_cmdline_get(const char *cmdline, const char *key, char *out, size_t outlen)
    __attribute__((warn_unused_result));

/* True for a host name made of letters, digits, '-' and '.', 1-64 long. */
bool agent_hostname_valid(const char *name);

/* Mounts proc, sysfs, devtmpfs, devpts, /dev/shm, /tmp, /run and cgroup2
 * where nothing is mounted yet, adds /dev/ptmx and /dev/fd links if missing,
 * sets the host name (cove.hostname= from the command line; as PID 1
 * AGENT_DEFAULT_HOSTNAME otherwise), brings up lo (and eth0, from cove.net=:
 * net.h) and sets PATH and HOME for
 * children (as PID 1 always, else only where unset).  Failures are logged
 * to stderr and skipped: a guest with less is still worth serving. */
void agent_sys_setup(bool pid1);

#endif
