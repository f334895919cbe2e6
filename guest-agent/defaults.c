#include "defaults.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct agent_defaults current;

static char *dup_or_null(const char *s, bool *fail)
{
	char *d = s ? strdup(s) : NULL;
	*fail |= s && !d;
	return d;
}

/* A copy of d's members in *out; -ENOMEM with nothing left over. */
static int copy(char *const *env, const char *cwd, const char *user, struct agent_defaults *out)
{
	bool fail = false;
	size_t n = 0;
	while (env && env[n])
		n++;
	memset(out, 0, sizeof(*out));
	if (n && !(out->env = calloc(n + 1, sizeof(char *))))
		fail = true;
	for (size_t i = 0; out->env && i < n; i++)
		out->env[i] = dup_or_null(env[i], &fail);
	out->cwd = dup_or_null(cwd, &fail);
	out->user = dup_or_null(user, &fail);
	if (fail) {
		agent_defaults_free(out);
		return -ENOMEM;
	}
	return 0;
}

int agent_defaults_set(char *const *env, const char *cwd, const char *user)
{
	struct agent_defaults d, old;
	int r = copy(env, cwd, user, &d);
	if (r < 0)
		return r;
	pthread_mutex_lock(&lock);
	old = current;
	current = d;
	pthread_mutex_unlock(&lock);
	agent_defaults_free(&old);
	return 0;
}

int agent_defaults_get(struct agent_defaults *d)
{
	pthread_mutex_lock(&lock);
	int r = copy(current.env, current.cwd, current.user, d);
	pthread_mutex_unlock(&lock);
	return r;
}

void agent_defaults_free(struct agent_defaults *d)
{
	for (char **e = d->env; e && *e; e++)
		free(*e);
	free(d->env);
	free(d->cwd);
	free(d->user);
	memset(d, 0, sizeof(*d));
}
