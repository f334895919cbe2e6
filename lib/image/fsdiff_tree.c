/* Naming what changed (fsdiff_tree.h): the entries of every changed
 * directory compared with its base, the contents of added directories
 * listed, and the paths of changed files that no changed directory names
 * found by a walk of directories only (entries carry their type), which
 * stops once all are found. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "lib/image/fsdiff_inode.h"
#include "lib/image/fsdiff_tree.h"

struct ent {
	char *name;
	uint32_t ino;
	uint8_t type; /* EXT2_FT_*; 0 unknown */
};

struct dirlist {
	struct ent *e;
	size_t n, cap;
	int err;
};

/* ino -> a path naming it, from the listings read. */
struct known {
	uint32_t ino;
	const char *path; /* owned by the change or listing that named it */
};

/* Directories to list: (ino, path). */
struct queue {
	uint32_t *ino;
	char **path;
	size_t head, n, cap;
};

/* The work of one fsdiff_tree call. */
struct tree {
	struct fsdiff *d;
	uint8_t *seen; /* directories listed, new side */
	struct queue q;
	uint32_t *orphan; /* changed files no listing named, sorted */
	bool *named;      /* orphan[i] has a path now */
	size_t norphan, found;
};

static void list_free(struct dirlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	memset(l, 0, sizeof(*l));
}

static int list_entry(ext2_ino_t dir, int entry, struct ext2_dir_entry *de, int offset,
                      int blocksize, char *buf, void *priv)
{
	(void)dir, (void)offset, (void)blocksize, (void)buf;
	struct dirlist *l = priv;
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE || !de->inode)
		return 0;
	int len = ext2fs_dirent_name_len(de);
	if (len <= 0 || (len == 1 && de->name[0] == '.') ||
	    (len == 2 && de->name[0] == '.' && de->name[1] == '.') || memchr(de->name, '/', len) ||
	    memchr(de->name, 0, len))
		return 0;
	if (l->n == l->cap) {
		size_t n = l->cap ? l->cap * 2 : 32;
		void *p = realloc(l->e, n * sizeof(*l->e));
		if (!p) {
			l->err = -ENOMEM;
			return DIRENT_ABORT;
		}
		l->e = p;
		l->cap = n;
	}
	struct ent *e = &l->e[l->n];
	if (!(e->name = strndup(de->name, (size_t)len))) {
		l->err = -ENOMEM;
		return DIRENT_ABORT;
	}
	e->ino = de->inode;
	e->type = (uint8_t)ext2fs_dirent_file_type(de);
	l->n++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name);
}

static int list_dir(struct fsdiff *d, struct fsdiff_side *s, uint32_t ino, struct dirlist *l)
{
	memset(l, 0, sizeof(*l));
	d->st.dirs_read++;
	errcode_t e = ext2fs_dir_iterate2(s->fs, ino, 0, NULL, list_entry, l);
	int oom = l->err;
	if (oom || e) {
		list_free(l);
		return oom ? errf(d->err, d->errlen, oom, "out of memory")
		           : fsdiff_ext2_err(d, s, e, "directory");
	}
	if (l->n)
		qsort(l->e, l->n, sizeof(*l->e), by_name);
	return 0;
}

static char *join(const char *dir, const char *name)
{
	char *p = NULL;
	if (asprintf(&p, "%s/%s", strcmp(dir, "/") ? dir : "", name) < 0)
		return NULL;
	return p;
}

/* Appends a change; takes path. */
static int emit(struct fsdiff *d, enum fsdiff_kind kind, char *path, uint32_t ino, uint32_t old_ino)
{
	if (!path)
		return errf(d->err, d->errlen, -ENOMEM, "out of memory");
	if (d->n == d->cap) {
		size_t n = d->cap ? d->cap * 2 : 64;
		void *p = realloc(d->c, n * sizeof(*d->c));
		if (!p) {
			free(path);
			return errf(d->err, d->errlen, -ENOMEM, "out of memory");
		}
		d->c = p;
		d->cap = n;
	}
	d->c[d->n++] = (struct fsdiff_change){ .path = path,
		                               .kind = kind,
		                               .ino = kind == FSDIFF_DELETED ? 0 : ino,
		                               .old_ino = old_ino };
	return 0;
}

static struct fsdiff_cand *cand_find(struct fsdiff *d, uint32_t ino)
{
	size_t lo = 0, hi = d->ncand;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->cand[mid].ino == ino)
			return &d->cand[mid];
		if (d->cand[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Whether an entry is a directory: its type, else its inode. */
static bool ent_is_dir(struct fsdiff *d, struct fsdiff_side *s, const struct ent *e)
{
	if (e->type)
		return e->type == EXT2_FT_DIR;
	struct ext2_inode_large in;
	return !fsdiff_read_inode(d, s->fs, e->ino, &in) && LINUX_S_ISDIR(in.i_mode);
}

static int enqueue(struct tree *t, uint32_t ino, const char *path)
{
	struct fsdiff *d = t->d;
	if (!ino || ino > d->now.fs->super->s_inodes_count || (t->seen[ino / 8] >> (ino % 8) & 1))
		return 0; /* a loop, or listed already */
	t->seen[ino / 8] |= (uint8_t)(1u << (ino % 8));
	struct queue *q = &t->q;
	if (q->n == q->cap) {
		size_t n = q->cap ? q->cap * 2 : 64;
		void *a = realloc(q->ino, n * sizeof(*q->ino));
		if (a)
			q->ino = a;
		void *b = a ? realloc(q->path, n * sizeof(*q->path)) : NULL;
		if (!b)
			return errf(d->err, d->errlen, -ENOMEM, "out of memory");
		q->path = b;
		q->cap = n;
	}
	if (!(q->path[q->n] = strdup(path)))
		return errf(d->err, d->errlen, -ENOMEM, "out of memory");
	q->ino[q->n++] = ino;
	return 0;
}

/* Every entry below the queued added directories is added too. */
static int list_added(struct tree *t)
{
	struct fsdiff *d = t->d;
	int r = 0;
	while (!r && t->q.head < t->q.n) {
		size_t k = t->q.head++;
		struct dirlist l;
		if ((r = list_dir(d, &d->now, t->q.ino[k], &l)))
			break;
		for (size_t i = 0; !r && i < l.n; i++) {
			char *p = join(t->q.path[k], l.e[i].name);
			if (p && ent_is_dir(d, &d->now, &l.e[i]))
				r = enqueue(t, l.e[i].ino, p);
			if (!r)
				r = emit(d, FSDIFF_ADDED, p, l.e[i].ino, 0);
			else
				free(p);
		}
		list_free(&l);
	}
	return r;
}

/* One changed directory's entries against its base's. */
static int diff_dir(struct tree *t, const struct fsdiff_cand *c, const char *path)
{
	struct fsdiff *d = t->d;
	struct dirlist a, b;
	int r = list_dir(d, &d->now, c->ino, &a);
	if (r)
		return r;
	if ((r = list_dir(d, &d->old, c->ino, &b))) {
		list_free(&a);
		return r;
	}
	size_t i = 0, j = 0;
	while (!r && (i < a.n || j < b.n)) {
		int cmp = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.e[i].name, b.e[j].name);
		const struct ent *e = cmp <= 0 ? &a.e[i] : &b.e[j];
		char *p = join(path, e->name);
		struct fsdiff_cand *x = cand_find(d, e->ino);
		if (cmp < 0) {
			if (x)
				x->named = true; /* moved here: added, not changed */
			if (p && ent_is_dir(d, &d->now, e))
				r = enqueue(t, e->ino, p);
			if (!r)
				r = emit(d, FSDIFF_ADDED, p, e->ino, 0);
			else
				free(p);
			i++;
		} else if (cmp > 0) {
			r = emit(d, FSDIFF_DELETED, p, 0, e->ino);
			j++;
		} else if (a.e[i].ino != b.e[j].ino || (x && !x->same)) {
			r = emit(d, FSDIFF_CHANGED, p, a.e[i].ino, b.e[j].ino);
			i++, j++;
		} else {
			if (x && !LINUX_S_ISDIR(x->now.i_mode) && !x->named) {
				x->named = true; /* a changed file this listing names */
				r = emit(d, FSDIFF_CHANGED, p, e->ino, e->ino);
			} else {
				free(p);
			}
			i++, j++;
		}
	}
	list_free(&a);
	list_free(&b);
	return r;
}

static int by_ino(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Walks directories from the root until every orphan has a path. */
static int name_orphans(struct tree *t)
{
	struct fsdiff *d = t->d;
	memset(t->seen, 0, d->now.fs->super->s_inodes_count / 8 + 1);
	for (size_t i = 0; i < t->q.n; i++)
		free(t->q.path[i]);
	t->q.head = t->q.n = 0;
	int r = enqueue(t, EXT2_ROOT_INO, "/");
	while (!r && t->found < t->norphan && t->q.head < t->q.n) {
		size_t k = t->q.head++;
		struct dirlist l;
		d->st.dirs_walked++;
		if ((r = list_dir(d, &d->now, t->q.ino[k], &l)))
			break;
		for (size_t i = 0; !r && i < l.n; i++) {
			const struct ent *e = &l.e[i];
			uint32_t *o = bsearch(&e->ino, t->orphan, t->norphan, sizeof(*o), by_ino);
			char *p = join(t->q.path[k], e->name);
			if (!p) {
				r = errf(d->err, d->errlen, -ENOMEM, "out of memory");
				break;
			}
			if (ent_is_dir(d, &d->now, e))
				r = enqueue(t, e->ino, p);
			if (o && !t->named[o - t->orphan] && !r) {
				t->named[o - t->orphan] = true;
				t->found++;
				r = emit(d, FSDIFF_CHANGED, p, e->ino, e->ino);
			} else {
				free(p);
			}
		}
		list_free(&l);
	}
	return r;
}

/* The changed directories, then what was added below them. */
static int changed_dirs(struct tree *t)
{
	struct fsdiff *d = t->d;
	int r = 0;
	for (size_t i = 0; !r && i < d->ncand; i++) {
		struct fsdiff_cand *c = &d->cand[i];
		if (!c->same || !LINUX_S_ISDIR(c->now.i_mode))
			continue;
		c->named = true;
		char *path = NULL;
		errcode_t e = ext2fs_get_pathname(d->now.fs, c->ino, 0, &path);
		if (e)
			return fsdiff_ext2_err(d, &d->now, e, "directory path");
		r = diff_dir(t, c, path);
		if (!r && c->ino != EXT2_ROOT_INO)
			r = emit(d, FSDIFF_CHANGED, strdup(path), c->ino, c->ino);
		ext2fs_free_mem(&path);
	}
	return r ? r : list_added(t);
}

int fsdiff_tree(struct fsdiff *d)
{
	struct tree t = { .d = d };
	t.seen = calloc(d->now.fs->super->s_inodes_count / 8 + 1, 1);
	int r = t.seen ? changed_dirs(&t) : errf(d->err, d->errlen, -ENOMEM, "out of memory");
	if (!r) {
		t.orphan = calloc(d->ncand + 1, sizeof(*t.orphan));
		t.named = calloc(d->ncand + 1, sizeof(*t.named));
		if (!t.orphan || !t.named)
			r = errf(d->err, d->errlen, -ENOMEM, "out of memory");
		for (size_t i = 0; !r && i < d->ncand; i++)
			if (d->cand[i].same && !d->cand[i].named)
				t.orphan[t.norphan++] = d->cand[i].ino;
	}
	if (!r && t.norphan)
		r = name_orphans(&t);
	for (size_t i = 0; i < t.q.n; i++)
		free(t.q.path[i]);
	free(t.q.path);
	free(t.q.ino);
	free(t.orphan);
	free(t.named);
	free(t.seen);
	return r;
}
