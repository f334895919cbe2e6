/* A build context: sources, .dockerignore, hashes, cache keys (context.h). */
#include "lib/image/context.h"

#include <archive.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"

/* ---- paths ---------------------------------------------------------------- */

/* Cuts a cleaned relative path (a copy in buf) at '/' into comps.
 * Return: the number of components, or -1 over max or PATH_MAX. */
static int split(const char *path, char *buf, char **comps, int max)
{
	size_t len = strlen(path);
	if (len >= PATH_MAX)
		return -1;
	memcpy(buf, path, len + 1);
	int n = 0;
	for (char *s = buf; *s;) {
		char *e = strchr(s, '/');
		if (e)
			*e = 0;
		if (*s && strcmp(s, ".")) {
			if (n == max)
				return -1;
			comps[n++] = s;
		}
		if (!e)
			break;
		s = e + 1;
	}
	return n;
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 2);
	if (!s)
		return NULL;
	memcpy(s, a, la);
	size_t k = la;
	if (la && lb)
		s[k++] = '/';
	memcpy(s + k, b, lb + 1);
	return s;
}

/* ---- .dockerignore -------------------------------------------------------- */

/* Pattern components pc against path components xc; "**" matches any
 * number of them. */
static bool comps_match(char *const *pc, size_t np, char *const *xc, size_t nx)
{
	if (!np)
		return !nx;
	if (!strcmp(pc[0], "**")) {
		for (size_t k = 0; k <= nx; k++)
			if (comps_match(pc + 1, np - 1, xc + k, nx - k))
				return true;
		return false;
	}
	return nx && !fnmatch(pc[0], xc[0], 0) && comps_match(pc + 1, np - 1, xc + 1, nx - 1);
}

bool ctx_ignored(const struct ctx *c, const char *path)
{
	char buf[PATH_MAX], *xc[CTX_DEPTH_MAX + 1];
	int nx = split(path, buf, xc, CTX_DEPTH_MAX + 1);
	if (nx <= 0)
		return false;
	bool out = false;
	for (size_t i = 0; i < c->nignore; i++) {
		const struct ctx_pattern *p = &c->ignore[i];
		if (p->except == !out)
			continue; /* it could not change the answer */
		for (int k = 1; k <= nx; k++)
			if (comps_match(p->comps, p->n, xc, (size_t)k)) {
				out = !p->except;
				break;
			}
	}
	return out;
}

/* One pattern line, trimmed, into c. */
static int ignore_add(struct ctx *c, const char *line, size_t len, char *err, size_t errlen)
{
	bool except = len && line[0] == '!';
	if (except) {
		line++;
		len--;
		while (len && (*line == ' ' || *line == '\t'))
			line++, len--;
	}
	char text[PATH_MAX], buf[PATH_MAX], *comps[CTX_DEPTH_MAX + 1];
	if (len >= sizeof(text))
		return errf(err, errlen, -EINVAL, ".dockerignore: a pattern is over %d bytes",
		            PATH_MAX);
	memcpy(text, line, len);
	text[len] = 0;
	int n = split(text, buf, comps, CTX_DEPTH_MAX + 1);
	if (n < 0)
		return errf(err, errlen, -EINVAL, ".dockerignore: pattern '%s' is too deep", text);
	/* ".." climbs lexically, as Go's filepath.Clean does; above the top it stays. */
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (!strcmp(comps[i], ".."))
			k -= k > 0;
		else
			comps[k++] = comps[i];
	}
	if (!k)
		return 0;
	if (c->nignore == CTX_IGNORE_MAX)
		return errf(err, errlen, -EINVAL, ".dockerignore: over %d patterns",
		            CTX_IGNORE_MAX);
	struct ctx_pattern *v = realloc(c->ignore, (c->nignore + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->ignore = v;
	struct ctx_pattern *p = &v[c->nignore];
	*p = (struct ctx_pattern){ .except = except };
	if (!(p->comps = calloc((size_t)k, sizeof(char *))))
		return -ENOMEM;
	c->nignore++;
	for (int i = 0; i < k; i++) {
		if (!(p->comps[i] = strdup(comps[i])))
			return -ENOMEM;
		p->n++;
	}
	c->has_except |= except;
	return 0;
}

int ctx_ignore_parse(struct ctx *c, const char *text, size_t len, char *err, size_t errlen)
{
	for (size_t i = 0; i < len;) {
		const char *l = text + i;
		const char *nl = memchr(l, '\n', len - i);
		size_t ll = nl ? (size_t)(nl - l) : len - i;
		i += ll + 1;
		while (ll && (l[ll - 1] == ' ' || l[ll - 1] == '\t' || l[ll - 1] == '\r'))
			ll--;
		while (ll && (*l == ' ' || *l == '\t'))
			l++, ll--;
		if (!ll || *l == '#')
			continue;
		int r = ignore_add(c, l, ll, err, errlen);
		if (r)
			return r;
	}
	return 0;
}

static int read_ignore(struct ctx *c, char *err, size_t errlen)
{
	int fd = openat(c->rootfd, ".dockerignore", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return errf(err, errlen, -errno, ".dockerignore: %s", strerror(errno));
	}
	struct stat st;
	char *text = NULL;
	int r = 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > CTX_IGNORE_BYTES)
		r = errf(err, errlen, -EINVAL,
		         ".dockerignore: not a regular file of at most %d bytes", CTX_IGNORE_BYTES);
	else if (!(text = malloc((size_t)st.st_size + 1)))
		r = -ENOMEM;
	size_t n = 0;
	while (!r && n < (size_t)st.st_size) {
		ssize_t k = read(fd, text + n, (size_t)st.st_size - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	if (!r)
		r = ctx_ignore_parse(c, text, n, err, errlen);
	free(text);
	close(fd);
	return r;
}

int ctx_open(struct ctx *c, const char *dir, char *err, size_t errlen)
{
	*c = (struct ctx){ .rootfd = -1 };
	c->rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->rootfd < 0)
		return errf(err, errlen, -errno, "build context %s: %s", dir, strerror(errno));
	int r = read_ignore(c, err, errlen);
	if (r)
		ctx_close(c);
	return r;
}

void ctx_close(struct ctx *c)
{
	if (c->rootfd >= 0)
		close(c->rootfd);
	for (size_t i = 0; i < c->nignore; i++) {
		for (size_t k = 0; k < c->ignore[i].n; k++)
			free(c->ignore[i].comps[k]);
		free(c->ignore[i].comps);
	}
	free(c->ignore);
	*c = (struct ctx){ .rootfd = -1 };
}

/* ---- reading sources ------------------------------------------------------ */

/* One ctx_resolve() call. */
struct walk {
	const struct ctx *c;
	struct ctx_files *out;
	bool archives;
	const char *pat;
	char *err;
	size_t errlen;
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The names in the folder dirfd, sorted (so hashes do not depend on the
 * order the file system lists them). */
static int list_dir(struct walk *w, int dirfd, const char *path, char ***names, size_t *n)
{
	*names = NULL;
	*n = 0;
	int fd = dup(dirfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return errf(w->err, w->errlen, -e, "'%s': %s", *path ? path : ".", strerror(e));
	}
	rewinddir(d);
	size_t cap = 0;
	int r = 0;
	struct dirent *de;
	while (!r && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (*n == CTX_ENTRIES_MAX)
			r = errf(w->err, w->errlen, -EINVAL, "'%s': over %d entries", path,
			         CTX_ENTRIES_MAX);
		else if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			char **v = realloc(*names, cap * sizeof(*v));
			if (!v)
				r = -ENOMEM;
			else
				*names = v;
		}
		if (!r && !((*names)[*n] = strdup(de->d_name)))
			r = -ENOMEM;
		if (!r)
			(*n)++;
	}
	closedir(d);
	if (r) {
		names_free(*names, *n);
		*names = NULL;
		*n = 0;
		return r;
	}
	if (*n)
		qsort(*names, *n, sizeof(char *), cmp_names);
	return 0;
}

/* Whether a symlink at src with this target stays inside the context. */
static bool link_inside(const char *src, const char *target)
{
	if (target[0] == '/')
		return false;
	char b1[PATH_MAX], b2[PATH_MAX], *c1[CTX_DEPTH_MAX + 1], *c2[PATH_MAX / 2];
	int n1 = split(src, b1, c1, CTX_DEPTH_MAX + 1);
	int n2 = split(target, b2, c2, PATH_MAX / 2);
	if (n1 < 1 || n2 < 0)
		return false;
	int depth = n1 - 1; /* the folder the link is in */
	for (int i = 0; i < n2; i++) {
		if (!strcmp(c2[i], ".."))
			depth--;
		else
			depth++;
		if (depth < 0)
			return false;
	}
	return true;
}

static int hash_file(struct walk *w, int dirfd, const char *name, const char *src,
                     const struct stat *st, struct ctx_entry *e)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat now;
	if (fd < 0)
		return errf(w->err, w->errlen, -errno, "'%s': %s", src, strerror(errno));
	if (fstat(fd, &now) || now.st_ino != st->st_ino || now.st_dev != st->st_dev) {
		close(fd);
		return errf(w->err, w->errlen, -EAGAIN, "'%s' changed while it was read", src);
	}
	struct sha256 h;
	sha256_init(&h);
	static __thread char buf[65536];
	uint64_t total = 0;
	int r = 0;
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = errf(w->err, w->errlen, -errno, "'%s': %s", src, strerror(errno));
			break;
		}
		if (!k)
			break;
		sha256_update(&h, buf, (size_t)k);
		total += (uint64_t)k;
	}
	sha256_final(&h, e->sha);
	e->size = total;
	if (!r && w->archives && lseek(fd, 0, SEEK_SET) == 0) {
		struct archive *a = archive_read_new();
		if (!a) {
			r = -ENOMEM;
		} else {
			archive_read_support_filter_gzip(a);
			archive_read_support_filter_bzip2(a);
			archive_read_support_filter_xz(a);
			archive_read_support_filter_zstd(a);
			archive_read_support_format_tar(a);
			struct archive_entry *ae;
			e->archive = archive_read_open_fd(a, fd, 16384) == ARCHIVE_OK &&
			             archive_read_next_header(a, &ae) >= ARCHIVE_WARN;
			archive_read_free(a);
		}
	}
	close(fd);
	return r;
}

/* Adds name (in dirfd; src in the context, rel under the destination). */
static int add_entry(struct walk *w, int dirfd, const char *name, const char *src, const char *rel,
                     const struct stat *st, bool top)
{
	struct ctx_files *f = w->out;
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode) && !S_ISLNK(st->st_mode))
		return errf(w->err, w->errlen, -EINVAL,
		            "COPY source '%s': '%s' is not a file, folder or symlink", w->pat, src);
	if (f->n == CTX_ENTRIES_MAX)
		return errf(w->err, w->errlen, -EINVAL, "COPY source '%s': over %d entries", w->pat,
		            CTX_ENTRIES_MAX);
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct ctx_entry *v = realloc(f->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->v = v;
		f->cap = cap;
	}
	struct ctx_entry *e = &f->v[f->n];
	*e = (struct ctx_entry){ .mode = (uint32_t)st->st_mode };
	f->n++;
	if (!(e->src = strdup(src)) || !(e->rel = strdup(rel)))
		return -ENOMEM;
	if (S_ISREG(st->st_mode)) {
		struct walk one = *w;
		one.archives = w->archives && top;
		return hash_file(&one, dirfd, name, src, st, e);
	}
	if (!S_ISLNK(st->st_mode))
		return 0;
	char target[PATH_MAX];
	ssize_t k = readlinkat(dirfd, name, target, sizeof(target) - 1);
	if (k < 0)
		return errf(w->err, w->errlen, -errno, "'%s': %s", src, strerror(errno));
	target[k] = 0;
	if (!link_inside(src, target))
		return errf(w->err, w->errlen, -EINVAL,
		            "COPY source '%s': symlink '%s' points out of the context ('%s')",
		            w->pat, src, target);
	return (e->link = strdup(target)) ? 0 : -ENOMEM;
}

static int open_dir(struct walk *w, int dirfd, const char *name, const char *src)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errf(w->err, w->errlen, -errno, "'%s': %s", src, strerror(errno));
	return fd;
}

/* Everything below the folder dirfd (src in the context, rel under the
 * destination), less what .dockerignore leaves out. */
static int walk_dir(struct walk *w, int dirfd, const char *src, const char *rel, int depth)
{
	if (depth > CTX_DEPTH_MAX)
		return errf(w->err, w->errlen, -EINVAL, "'%s': over %d folders deep", src,
		            CTX_DEPTH_MAX);
	char **names;
	size_t n;
	int r = list_dir(w, dirfd, src, &names, &n);
	for (size_t i = 0; !r && i < n; i++) {
		char *s = join(src, names[i]), *d = join(rel, names[i]);
		struct stat st;
		if (!s || !d)
			r = -ENOMEM;
		else if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW))
			r = errf(w->err, w->errlen, -errno, "'%s': %s", s, strerror(errno));
		bool ign = !r && ctx_ignored(w->c, s);
		if (!r && S_ISDIR(st.st_mode) && (!ign || w->c->has_except)) {
			if (!ign)
				r = add_entry(w, dirfd, names[i], s, d, &st, false);
			int fd = r ? -1 : open_dir(w, dirfd, names[i], s);
			if (fd < 0 && !r)
				r = fd;
			if (fd >= 0) {
				r = walk_dir(w, fd, s, d, depth + 1);
				close(fd);
			}
		} else if (!r && !ign && !S_ISDIR(st.st_mode)) {
			r = add_entry(w, dirfd, names[i], s, d, &st, false);
		}
		free(s);
		free(d);
	}
	names_free(names, n);
	return r;
}

/* A path a pattern matched: name in dirfd, path in the context. */
static int take(struct walk *w, int dirfd, const char *name, const char *path,
                const struct stat *st)
{
	bool ign = ctx_ignored(w->c, path);
	if (!S_ISDIR(st->st_mode)) {
		if (ign)
			return 0;
		w->out->matches++;
		const char *base = strrchr(path, '/');
		return add_entry(w, dirfd, name, path, base ? base + 1 : path, st, true);
	}
	if (ign && !w->c->has_except)
		return 0;
	size_t before = w->out->n;
	int fd = open_dir(w, dirfd, name, path);
	if (fd < 0)
		return fd;
	int r = walk_dir(w, fd, path, "", 1);
	close(fd);
	if (!r && (!ign || w->out->n > before))
		w->out->matches++;
	return r;
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[\\") != NULL;
}

/* Matches comps[i..n) below the folder dirfd (prefix in the context). */
static int match(struct walk *w, int dirfd, const char *prefix, char **comps, int i, int n)
{
	if (i >= CTX_DEPTH_MAX)
		return errf(w->err, w->errlen, -EINVAL, "COPY source '%s' is over %d folders deep",
		            w->pat, CTX_DEPTH_MAX);
	char **names = NULL;
	size_t nn = 0;
	bool glob = has_glob(comps[i]);
	int r = glob ? list_dir(w, dirfd, prefix, &names, &nn) : 0;
	for (size_t k = 0; !r && k < (glob ? nn : 1); k++) {
		const char *name = glob ? names[k] : comps[i];
		if (glob && fnmatch(comps[i], name, 0))
			continue;
		char *path = join(prefix, name);
		struct stat st;
		if (!path) {
			r = -ENOMEM;
		} else if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
			if (errno != ENOENT && errno != ENOTDIR)
				r = errf(w->err, w->errlen, -errno, "'%s': %s", path,
				         strerror(errno));
		} else if (i == n - 1) {
			r = take(w, dirfd, name, path, &st);
		} else if (S_ISDIR(st.st_mode)) {
			int fd = open_dir(w, dirfd, name, path);
			r = fd < 0 ? fd : match(w, fd, path, comps, i + 1, n);
			if (fd >= 0)
				close(fd);
		} else if (S_ISLNK(st.st_mode) && !glob) {
			r = errf(
			    w->err, w->errlen, -EINVAL,
			    "COPY source '%s': '%s' is a symlink (links in a source path are not "
			    "followed)",
			    w->pat, path);
		}
		free(path);
	}
	names_free(names, nn);
	return r;
}

static void hash_files(struct ctx_files *f)
{
	struct sha256 h;
	sha256_init(&h);
	uint64_t n = f->n;
	sha256_update(&h, &n, sizeof(n));
	for (size_t i = 0; i < f->n; i++) {
		const struct ctx_entry *e = &f->v[i];
		sha256_update(&h, e->rel, strlen(e->rel) + 1);
		uint32_t mode = e->mode;
		uint8_t arch = e->archive;
		sha256_update(&h, &mode, sizeof(mode));
		sha256_update(&h, &arch, 1);
		if (S_ISREG(e->mode)) {
			sha256_update(&h, &e->size, sizeof(e->size));
			sha256_update(&h, e->sha, SHA256_LEN);
		} else if (S_ISLNK(e->mode)) {
			sha256_update(&h, e->link, strlen(e->link) + 1);
		}
	}
	sha256_final(&h, f->hash);
}

int ctx_resolve(const struct ctx *c, const char *const *pats, size_t npats, bool archives,
                struct ctx_files *out, char *err, size_t errlen)
{
	struct walk w = { .c = c, .out = out, .archives = archives, .err = err, .errlen = errlen };
	for (size_t p = 0; p < npats; p++) {
		char buf[PATH_MAX], *comps[CTX_DEPTH_MAX + 1];
		w.pat = pats[p];
		int n = split(pats[p], buf, comps, CTX_DEPTH_MAX + 1);
		if (n < 0)
			return errf(err, errlen, -EINVAL, "COPY source '%s' is too long or deep",
			            pats[p]);
		for (int i = 0; i < n; i++)
			if (!strcmp(comps[i], ".."))
				return errf(err, errlen, -EINVAL,
				            "COPY source '%s' leaves the context", pats[p]);
		size_t before = out->matches;
		int r =
		    n ? match(&w, c->rootfd, "", comps, 0, n) : walk_dir(&w, c->rootfd, "", "", 1);
		if (!n && !r)
			out->matches++;
		if (r)
			return r;
		if (out->matches == before)
			return errf(err, errlen, -ENOENT,
			            "COPY source '%s' matches nothing in the context", pats[p]);
	}
	hash_files(out);
	return 0;
}

void ctx_files_free(struct ctx_files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].src);
		free(f->v[i].rel);
		free(f->v[i].link);
	}
	free(f->v);
	*f = (struct ctx_files){ 0 };
}

void ctx_step_key(const uint8_t parent[SHA256_LEN], const char *text,
                  const uint8_t inputs[SHA256_LEN], uint8_t out[SHA256_LEN])
{
	struct sha256 h;
	uint64_t len = strlen(text);
	sha256_init(&h);
	sha256_update(&h, parent, SHA256_LEN);
	sha256_update(&h, &len, sizeof(len));
	sha256_update(&h, text, len);
	sha256_update(&h, inputs, SHA256_LEN);
	sha256_final(&h, out);
}
