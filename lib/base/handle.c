/* The sandbox handle: a new one, its paths in the runtime directory, its
 * name and the accessors of cove.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "errf.h"
#include "lib/base/handle.h"
#include "lib/base/jail.h"
#include "lib/base/registry.h"

const char *cove_sandbox_dir(const struct cove_sandbox *sb)
{
	return sb->dir;
}

const char *cove_sandbox_name(const struct cove_sandbox *sb)
{
	return sb->name;
}

pid_t cove_vmm_pid(const struct cove_sandbox *sb)
{
	return sb->pid;
}

bool cove_name_valid(const char *name)
{
	return registry_name_valid(name);
}

int sandbox_check_name(const char *name, char *err, size_t errlen)
{
	if (registry_name_valid(name))
		return 0;
	return errf(err, errlen, -EINVAL,
	            "invalid sandbox name '%s': 1 to %d of A-Z a-z 0-9 _ . -, "
	            "not starting with '.'",
	            name ? name : "", REGISTRY_NAME_MAX);
}

struct cove_sandbox *sandbox_new(bool detached)
{
	struct cove_sandbox *sb = calloc(1, sizeof(*sb));
	if (sb) {
		sb->pidfd = -1;
		sb->jail.cgroup_fd = -1;
		sb->ttl_stop_fd = -1;
		sb->net.tap_fd = -1;
		sb->net.egress_pidfd = -1;
		sb->detached = detached;
	}
	return sb;
}

void sandbox_paths(struct cove_sandbox *sb, const char *base, const char *name)
{
	snprintf(sb->dir, sizeof(sb->dir), "%s/%s", base, name);
	snprintf(sb->name, sizeof(sb->name), "%s", name);
	snprintf(sb->root, sizeof(sb->root), "%s/%s", sb->dir, JAIL_ROOT_DIR);
	snprintf(sb->vsock, sizeof(sb->vsock), "%s/vsock", sb->root);
	snprintf(sb->api, sizeof(sb->api), "%s/%s", sb->dir, SANDBOX_API_SOCK);
}
