/* The exec defaults (PROTO_DEFAULTS, defaults.c): the env, cwd and user
 * of every later EXEC and PROC_START that does not give its own (a
 * template's ENV, WORKDIR and USER).  Kept in the agent's memory only, so
 * a snapshot taken afterwards keeps them and its restores inherit them. */
#ifndef COVE_AGENT_DEFAULTS_H
#define COVE_AGENT_DEFAULTS_H

struct agent_defaults {
	char **env; /* "K=V", NULL-terminated, or NULL */
	char *cwd;  /* NULL: none */
	char *user; /* NULL: none (root) */
};

/* Replaces the defaults with copies of env (NULL-terminated or NULL), cwd
 * and user (NULL: none), all at once.  0 or -ENOMEM (the old ones kept).
 * Thread-safe. */
int agent_defaults_set(char *const *env, const char *cwd, const char *user)
    __attribute__((warn_unused_result));

/* A copy of the defaults in *d (members NULL where unset): 0 or -ENOMEM.
 * Free with agent_defaults_free.  Thread-safe. */
int agent_defaults_get(struct agent_defaults *d) __attribute__((warn_unused_result));
void agent_defaults_free(struct agent_defaults *d);

#endif
