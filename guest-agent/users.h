/* Users of the guest (users.c): a user spec ("root", a name, a uid,
 * "name:group", "uid:gid") resolved against the guest's /etc/passwd and
 * /etc/group with a bounded line parser of its own (the agent is static:
 * no NSS).  Pure apart from agent_user_resolve's file reads. */
#ifndef COVE_AGENT_USERS_H
#define COVE_AGENT_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGENT_USERS_FILE_MAX (4u << 20) /* bytes of /etc/passwd or /etc/group */
#define AGENT_USERS_LINE_MAX 4096       /* bytes of one line */
#define AGENT_USER_SPEC_MAX  256        /* bytes of a spec */
#define AGENT_GROUPS_MAX     64         /* supplementary groups kept */
#define AGENT_PASSWD         "/etc/passwd"
#define AGENT_GROUP          "/etc/group"

struct agent_user {
	uint32_t uid, gid;              /* gid: the primary group */
	gid_t groups[AGENT_GROUPS_MAX]; /* for setgroups: the primary group first */
	size_t ngroups;
	char home[AGENT_USERS_LINE_MAX]; /* from passwd; "/" for a uid without an entry */
};

/* True for a spec's syntax: 1..AGENT_USER_SPEC_MAX bytes, printable, no
 * spaces, at most one ':' with something on either side.  Whether the
 * names exist is agent_user_resolve's question. */
bool agent_user_spec_valid(const char *spec);

/* Resolves spec against the contents of passwd and group (either may be
 * NULL, as a missing file): a name must be in passwd; a uid without an
 * entry gets gid = uid (unless a group is given) and home "/".  Without a
 * group in the spec, the groups are the primary one plus those of group
 * that list the user's name; with one, only that one.  0 or -EINVAL with
 * one line in err ("user 'bob' is not in /etc/passwd"), -E2BIG for a line
 * over AGENT_USERS_LINE_MAX. */
int agent_user_resolve_text(const char *spec, const char *passwd, size_t plen, const char *group,
                            size_t glen, struct agent_user *u, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* agent_user_resolve_text over the files at passwd_path and group_path
 * (AGENT_PASSWD, AGENT_GROUP in the guest): a missing file counts as
 * empty; one over AGENT_USERS_FILE_MAX is refused (-EFBIG). */
int agent_user_resolve(const char *spec, const char *passwd_path, const char *group_path,
                       struct agent_user *u, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
