/* /etc/passwd and /etc/group, read the way runc reads them for a
 * container's USER: lines of colon-separated fields, '#' comments and
 * malformed lines skipped, every line bounded. */
#include "users.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"
#include "io.h"

#define ID_MAX 4294967294u /* (uid_t)-1 means "unchanged" to the kernel */

struct line_iter {
	const char *text;
	size_t len, off;
	const char *file; /* for messages */
};

/* The next line into buf (NUL-terminated, without its '\n'): 1, 0 at the
 * end, -E2BIG for a line over AGENT_USERS_LINE_MAX. */
static int next_line(struct line_iter *it, char buf[AGENT_USERS_LINE_MAX + 1], char *err,
                     size_t errlen)
{
	if (!it->text || it->off >= it->len)
		return 0;
	const char *p = it->text + it->off;
	size_t left = it->len - it->off;
	const char *nl = memchr(p, '\n', left);
	size_t n = nl ? (size_t)(nl - p) : left;
	if (n > AGENT_USERS_LINE_MAX)
		return errf(err, errlen, -E2BIG, "a line of %s is over %d bytes", it->file,
		            AGENT_USERS_LINE_MAX);
	memcpy(buf, p, n);
	buf[n] = 0;
	it->off += n + (nl ? 1 : 0);
	return 1;
}

/* Splits line at ':' into exactly nf fields; false for another count. */
static bool split(char *line, char **f, int nf)
{
	int k = 0;
	f[k++] = line;
	for (char *p = line; *p; p++) {
		if (*p != ':')
			continue;
		if (k == nf)
			return false;
		*p = 0;
		f[k++] = p + 1;
	}
	return k == nf;
}

static bool parse_id(const char *s, uint32_t *out)
{
	if (!*s || strlen(s) > 10)
		return false;
	uint64_t v = 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v > ID_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

static bool skipped(const char *line)
{
	return !line[0] || line[0] == '#' || line[0] == '+' || line[0] == '-';
}

bool agent_user_spec_valid(const char *spec)
{
	size_t n = spec ? strnlen(spec, AGENT_USER_SPEC_MAX + 1) : 0;
	if (n == 0 || n > AGENT_USER_SPEC_MAX)
		return false;
	const char *colon = strchr(spec, ':');
	if (colon && (colon == spec || !colon[1] || strchr(colon + 1, ':')))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)spec[i] <= ' ' || (unsigned char)spec[i] >= 0x7f)
			return false;
	return true;
}

/* The passwd entry of name (or of uid when name is NULL): 1 with *u's
 * uid, gid, home and its name in uname; 0 when there is none. */
static int find_user(const char *text, size_t len, const char *name, uint32_t uid,
                     struct agent_user *u, char *uname, size_t unamelen, char *err, size_t errlen)
{
	struct line_iter it = { .text = text, .len = len, .file = AGENT_PASSWD };
	char line[AGENT_USERS_LINE_MAX + 1];
	int r;
	while ((r = next_line(&it, line, err, errlen)) == 1) {
		char *f[7];
		uint32_t id, gid;
		if (skipped(line) || !split(line, f, 7) || !parse_id(f[2], &id) ||
		    !parse_id(f[3], &gid))
			continue;
		if (name ? strcmp(f[0], name) != 0 : id != uid)
			continue;
		u->uid = id;
		u->gid = gid;
		snprintf(u->home, sizeof(u->home), "%s", f[5][0] == '/' ? f[5] : "/");
		snprintf(uname, unamelen, "%s", f[0]);
		return 1;
	}
	return r;
}

/* The gid of group name (or checks gid when name is NULL): 1 when
 * found, 0 when not. */
static int find_group(const char *text, size_t len, const char *name, uint32_t *gid, char *err,
                      size_t errlen)
{
	struct line_iter it = { .text = text, .len = len, .file = AGENT_GROUP };
	char line[AGENT_USERS_LINE_MAX + 1];
	int r;
	while ((r = next_line(&it, line, err, errlen)) == 1) {
		char *f[4];
		uint32_t id;
		if (skipped(line) || !split(line, f, 4) || !parse_id(f[2], &id))
			continue;
		if (!strcmp(f[0], name)) {
			*gid = id;
			return 1;
		}
	}
	return r;
}

static void add_group(struct agent_user *u, uint32_t gid)
{
	for (size_t i = 0; i < u->ngroups; i++)
		if (u->groups[i] == gid)
			return;
	if (u->ngroups < AGENT_GROUPS_MAX)
		u->groups[u->ngroups++] = gid;
}

/* The groups whose member lists name uname. */
static int member_groups(const char *text, size_t len, const char *uname, struct agent_user *u,
                         char *err, size_t errlen)
{
	struct line_iter it = { .text = text, .len = len, .file = AGENT_GROUP };
	char line[AGENT_USERS_LINE_MAX + 1];
	int r;
	while ((r = next_line(&it, line, err, errlen)) == 1) {
		char *f[4];
		uint32_t id;
		if (skipped(line) || !split(line, f, 4) || !parse_id(f[2], &id))
			continue;
		char *save = NULL;
		for (char *m = strtok_r(f[3], ",", &save); m; m = strtok_r(NULL, ",", &save))
			if (!strcmp(m, uname))
				add_group(u, id);
	}
	return r;
}

int agent_user_resolve_text(const char *spec, const char *passwd, size_t plen, const char *group,
                            size_t glen, struct agent_user *u, char *err, size_t errlen)
{
	memset(u, 0, sizeof(*u));
	if (!agent_user_spec_valid(spec))
		return errf(err, errlen, -EINVAL, "user '%.64s' is not a user[:group]",
		            spec ? spec : "");
	char buf[AGENT_USER_SPEC_MAX + 1], uname[AGENT_USERS_LINE_MAX + 1] = "";
	snprintf(buf, sizeof(buf), "%s", spec);
	char *gpart = strchr(buf, ':');
	if (gpart)
		*gpart++ = 0;
	uint32_t id = 0;
	bool numeric = parse_id(buf, &id);
	int r =
	    find_user(passwd, plen, numeric ? NULL : buf, id, u, uname, sizeof(uname), err, errlen);
	if (r < 0)
		return r;
	if (r == 0 && !numeric)
		return errf(err, errlen, -EINVAL, "user '%s' is not in %s", buf, AGENT_PASSWD);
	if (r == 0) { /* a uid of its own: no entry, no groups */
		u->uid = u->gid = id;
		snprintf(u->home, sizeof(u->home), "/");
	}
	if (gpart) {
		uint32_t gid;
		if (!parse_id(gpart, &gid)) {
			r = find_group(group, glen, gpart, &gid, err, errlen);
			if (r < 0)
				return r;
			if (r == 0)
				return errf(err, errlen, -EINVAL, "group '%s' is not in %s", gpart,
				            AGENT_GROUP);
		}
		u->gid = gid;
		add_group(u, gid);
		return 0;
	}
	add_group(u, u->gid);
	return uname[0] ? member_groups(group, glen, uname, u, err, errlen) : 0;
}

/* The whole file at path (file_slurp); NULL with *len 0 when there is
 * none. */
static int slurp(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	int e = 0;
	*len = 0;
	*text = file_slurp(path, AGENT_USERS_FILE_MAX, len, &st, &e);
	if (*text || e == ENOENT)
		return 0;
	if (e == EFBIG)
		return errf(err, errlen, -EFBIG, "%s is over %u bytes", path, AGENT_USERS_FILE_MAX);
	if (e == EINVAL)
		return errf(err, errlen, -EINVAL, "%s is not a regular file", path);
	return errf(err, errlen, -e, "%s: %s", path, strerror(e));
}

int agent_user_resolve(const char *spec, const char *passwd_path, const char *group_path,
                       struct agent_user *u, char *err, size_t errlen)
{
	char *pw = NULL, *gr = NULL;
	size_t plen = 0, glen = 0;
	int r = slurp(passwd_path, &pw, &plen, err, errlen);
	if (r == 0)
		r = slurp(group_path, &gr, &glen, err, errlen);
	if (r == 0)
		r = agent_user_resolve_text(spec, pw, plen, gr, glen, u, err, errlen);
	free(pw);
	free(gr);
	return r;
}
