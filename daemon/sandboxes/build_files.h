/* The archives COPY steps read (build_files.c): uploaded per tenant and
 * named by the hash the client gives (E2B's filesHash: its SDK hashes the
 * COPY line and the files' names, modes, sizes and contents, which the
 * server cannot recompute from the archive, so the hash is only a name:
 * a tenant's archives are its own, and one tenant's upload never serves
 * another's build).  An upload is a tar (plain or compressed) streamed to
 * a file within max_upload_bytes, then unpacked into
 * <state_dir>/template-files/<tenant>/<hash>/ (regular files, folders and
 * symlinks only; no path out of it), which a COPY's context is. */
#ifndef COVED_SANDBOXES_BUILD_FILES_H
#define COVED_SANDBOXES_BUILD_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct coved;

#define COVED_FILES_ENTRIES_MAX 100000 /* entries of one archive */
#define COVED_FILES_DEPTH_MAX   128    /* folders deep */

/* coved_files_init() - the upload links' table: 0 or -ENOMEM. */
int coved_files_init(struct coved *d) __attribute__((warn_unused_result));

/* coved_files_dir() - where tenant's archive hash is unpacked (whether or
 * not it is there). */
void coved_files_dir(const struct coved *d, const char *tenant, const char *hash, char *out,
                     size_t len);
/* coved_files_present() - whether tenant's archive hash is unpacked. */
bool coved_files_present(const struct coved *d, const char *tenant, const char *hash);

/* coved_files_unpack() - unpacks the tar at path (then removed) as
 * tenant's archive hash, within max bytes and COVED_FILES_ENTRIES_MAX
 * entries.  Return: 0, or -errno with a one-line message (a bad archive:
 * -EINVAL). */
int coved_files_unpack(const struct coved *d, const char *tenant, const char *hash,
                       const char *path, uint64_t max, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* coved_files_mode_targets() - what a COPY of src (in the unpacked folder
 * ctx; no glob) to dest puts at its top, as E2B's builder sets a COPY's
 * mode on: a file's guest path (dest, or dest and the file's name when
 * dest ends in '/'), or each entry of a folder under dest.  Into out as
 * shell words, each single-quoted.  Return: 0, or -EINVAL with a message
 * (a glob, a source outside ctx or missing, over len bytes). */
int coved_files_mode_targets(const char *ctx, const char *src, const char *dest, char *out,
                             size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* coved_files_spool() - a new file for an upload of tenant's (its fd, the
 * path into path), in the tenant's folder.  Return: fd or -errno. */
int coved_files_spool(const struct coved *d, const char *tenant, char *path, size_t len);

/* coved_upload_link() - a token for one upload of tenant's archive hash,
 * valid an hour (E2B's upload URL carries it instead of a key).
 * Return: 0, or -ENOSPC when too many are out. */
int coved_upload_link(struct coved *d, const char *tenant, const char *hash, char token[65]);
/* coved_upload_take() - the tenant and hash of a token, which is used up.
 * Return: true when the token was valid. */
bool coved_upload_take(struct coved *d, const char *token, char *tenant, size_t tlen, char *hash,
                       size_t hlen);

#endif
