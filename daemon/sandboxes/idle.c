/* Idle pause and auto-resume (idle.h). */
#include "daemon/sandboxes/idle.h"

#include <jansson.h>
#include <pthread.h>
#include <string.h>

#include "cove.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"

/* The idle timeout from now (sb->mu held). */
static void push_end(struct coved_sb *sb)
{
	if (sb->idle_s)
		sb->end_ms = coved_now_ms() + (int64_t)sb->idle_s * 1000;
}

void coved_sb_busy(struct coved_sb *sb)
{
	pthread_mutex_lock(&sb->mu);
	sb->busy++;
	push_end(sb);
	pthread_mutex_unlock(&sb->mu);
}

void coved_sb_unbusy(struct coved_sb *sb)
{
	pthread_mutex_lock(&sb->mu);
	if (sb->busy > 0)
		sb->busy--;
	push_end(sb);
	pthread_mutex_unlock(&sb->mu);
}

/* Whether a command other than the template's start command runs in sb. */
static bool guest_busy(struct coved_sb *sb)
{
	json_t *procs = NULL;
	char err[256];
	if (cove_proc_list(sb->cove, &procs, err, sizeof(err)) < 0)
		return false; /* no answer: nothing it does is worth waking for */
	bool busy = false;
	size_t i;
	json_t *p;
	json_array_foreach(procs, i, p)
	{
		const char *tag = json_string_value(json_object_get(p, "tag"));
		busy = busy || (json_is_true(json_object_get(p, "running")) &&
		                !(tag && !strcmp(tag, "cove-start")));
	}
	json_decref(procs);
	return busy;
}

bool coved_sb_idle_due(struct coved_sb *sb)
{
	pthread_mutex_lock(&sb->mu);
	bool requests = sb->busy > 0;
	if (requests)
		push_end(sb);
	pthread_mutex_unlock(&sb->mu);
	if (requests)
		return false;
	if (!guest_busy(sb))
		return true;
	pthread_mutex_lock(&sb->mu);
	push_end(sb);
	pthread_mutex_unlock(&sb->mu);
	return false;
}
