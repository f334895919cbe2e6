/* coved_sb_diff (diffsrc.h).  The sandbox's own layers are the snapshot
 * directories its disks stand on (its pauses, the snapshot it was forked
 * from); the first layer below them is its base. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cove.h"
#include "daemon/sandboxes/diffsrc.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "errf.h"

int coved_sb_diff(struct coved_sb *sb, int tar_fd, struct cove_diff **out, char *msg, size_t len)
{
	*out = NULL;
	pthread_mutex_lock(&sb->op);
	pthread_mutex_lock(&sb->mu);
	enum coved_state state = sb->state;
	bool removed = sb->removed;
	char top[4200] = "";
	if (state == COVED_SB_RUNNING && sb->cove)
		cove_root_disk(sb->cove, top, sizeof(top));
	else if (state == COVED_SB_PAUSED && sb->paused_dir)
		snprintf(top, sizeof(top), "%s/disk0.qcow2", sb->paused_dir);
	pthread_mutex_unlock(&sb->mu);
	int st = 0;
	if (removed)
		st = errf(msg, len, 404, "sandbox %s not found", sb->id);
	else if (!top[0])
		st = errf(msg, len, 409, "sandbox %s is %s: its disk is gone", sb->id,
		          coved_state_name(state));
	if (!st) {
		/* sb->snaps only grows under op, which we hold. */
		struct cove_diff_src src = { .top = top,
			                     .own_dirs = (const char *const *)sb->snaps,
			                     .nown = sb->nsnaps,
			                     .freeze = state == COVED_SB_RUNNING ? sb->cove : NULL,
			                     .tar_fd = tar_fd };
		char err[512];
		if (cove_diff_disk(&src, out, err, sizeof(err)) < 0)
			st = errf(msg, len, 500, "diff of %s: %s", sb->id, err);
	}
	pthread_mutex_unlock(&sb->op);
	return st;
}
