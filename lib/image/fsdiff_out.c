/* A filesystem diff written out (fsdiff.h): docker diff's text, JSON, and
 * a tar of what was added or changed. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errf.h"
#include "lib/base/sha256.h"
#include "lib/image/fsdiff_out.h"

static const char *const g_kind[] = { "added", "changed", "deleted" };

char *fsdiff_text(const struct fsdiff *d)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	for (size_t i = 0; i < fsdiff_count(d); i++) {
		const struct fsdiff_change *c = fsdiff_get(d, i);
		fprintf(f, "%c %s\n", "ACD"[c->kind], c -> path);
	}
	if (fclose(f)) {
		free(out);
		return NULL;
	}
	return out;
}

static json_t *attr_json(const struct fsdiff_attr *a, bool with_type)
{
	json_t *o = json_pack("{s:I, s:i, s:i, s:i}", "size", (json_int_t)a->size, "mode",
	                      (int)a->mode, "uid", (int)a->uid, "gid", (int)a->gid);
	if (o && with_type)
		json_object_set_new(o, "type", json_string(a->type));
	return o;
}

static json_t *change_json(const struct fsdiff_change *c)
{
	const struct fsdiff_attr *a = c->kind == FSDIFF_DELETED ? &c->old : &c->now;
	json_t *o = attr_json(a, true);
	if (!o)
		return NULL;
	json_object_set_new(o, "path", json_string(c->path));
	json_object_set_new(o, "kind", json_string(g_kind[c->kind]));
	if (c->kind == FSDIFF_CHANGED)
		json_object_set_new(o, "old", attr_json(&c->old, strcmp(c->old.type, c->now.type)));
	if (c->has_sha256) {
		char hex[SHA256_HEX];
		sha256_hex(c->sha256, hex);
		json_object_set_new(o, "sha256", json_string(hex));
	}
	if (c->unhashed)
		json_object_set_new(o, "unhashed", json_true());
	if (c->target)
		json_object_set_new(o, "target", json_string(c->target));
	return o;
}

char *fsdiff_json(const struct fsdiff *d)
{
	const struct fsdiff_stats *s = fsdiff_stats(d);
	json_t *changes = json_array();
	json_t *stats = json_pack(
	    "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "bytes_allocated",
	    (json_int_t)s->bytes_allocated, "blocks_changed", (json_int_t)s->blocks_changed,
	    "itable_blocks", (json_int_t)s->itable_blocks, "inodes_examined",
	    (json_int_t)s->inodes_examined, "inodes_changed", (json_int_t)s->inodes_changed,
	    "dirs_read", (json_int_t)s->dirs_read, "dirs_walked", (json_int_t)s->dirs_walked,
	    "journal_copies", (json_int_t)s->journal_copies_new, "journal_copies_base",
	    (json_int_t)s->journal_copies_old, "reads", (json_int_t)s->reads, "bytes_read",
	    (json_int_t)s->bytes_read, "files_unhashed", (json_int_t)s->files_unhashed,
	    "elapsed_us", (json_int_t)s->elapsed_us);
	for (size_t i = 0; changes && i < fsdiff_count(d); i++)
		json_array_append_new(changes, change_json(fsdiff_get(d, i)));
	json_t *o = json_pack("{s:o?, s:o?}", "changes", changes, "stats", stats);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return text;
}

static int tar_sink(void *arg, const void *buf, size_t len)
{
	return archive_write_data(arg, buf, len) == (la_ssize_t)len ? 0 : -EIO;
}

static int tar_one(struct fsdiff *d, struct archive *a, const struct fsdiff_change *c, char *err,
                   size_t errlen)
{
	const char *t = c->now.type;
	mode_t type = !strcmp(t, "file")      ? AE_IFREG
	              : !strcmp(t, "dir")     ? AE_IFDIR
	              : !strcmp(t, "symlink") ? AE_IFLNK
	                                      : 0;
	if (!type || c->unhashed)
		return 0; /* devices, FIFOs, sockets, files past the bound: listed only */
	struct archive_entry *e = archive_entry_new();
	if (!e)
		return errf(err, errlen, -ENOMEM, "out of memory");
	archive_entry_set_pathname(e, c->path + 1);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, c->now.mode);
	archive_entry_set_uid(e, c->now.uid);
	archive_entry_set_gid(e, c->now.gid);
	archive_entry_set_size(e, type == AE_IFREG ? (la_int64_t)c->now.size : 0);
	if (c->target)
		archive_entry_set_symlink(e, c->target);
	int r = 0;
	if (archive_write_header(a, e) != ARCHIVE_OK)
		r = errf(err, errlen, -EIO, "tar: %s", archive_error_string(a));
	else if (type == AE_IFREG)
		r = fsdiff_read_file(d, c, tar_sink, a, err, errlen);
	archive_entry_free(e);
	return r;
}

int fsdiff_tar(struct fsdiff *d, int fd, char *err, size_t errlen)
{
	struct archive *a = archive_write_new();
	if (!a)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = 0;
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_fd(a, fd) != ARCHIVE_OK)
		r = errf(err, errlen, -EIO, "tar: %s", archive_error_string(a));
	for (size_t i = 0; !r && i < fsdiff_count(d); i++) {
		const struct fsdiff_change *c = fsdiff_get(d, i);
		if (c->kind != FSDIFF_DELETED)
			r = tar_one(d, a, c, err, errlen);
	}
	if (archive_write_close(a) != ARCHIVE_OK && !r)
		r = errf(err, errlen, -EIO, "tar: %s", archive_error_string(a));
	archive_write_free(a);
	return r;
}
