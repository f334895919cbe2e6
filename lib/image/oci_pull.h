/* Registry references pulled with skopeo (oci_pull.c): `skopeo copy
 * docker://REF oci:DIR:TAG` into an OCI layout, spawned with a deadline.
 * Nothing here speaks to a registry itself. */
#ifndef COVE_IMAGE_OCI_PULL_H
#define COVE_IMAGE_OCI_PULL_H

#include <stdbool.h>
#include <stddef.h>

#define OCI_PULL_REF_MAX 512 /* bytes of a registry reference */

/* skopeo's command line for one pull; argv points into the struct. */
struct oci_pull_cmd {
	char src[OCI_PULL_REF_MAX + 16];
	char dst[4096 + 160];
	const char *argv[12];
};

/* oci_pull_ref_valid() - whether @ref looks like a registry reference
 * ([HOST/]NAME[:TAG][@sha256:HEX]: letters, digits, ". _ - / : @",
 * starting with a letter or digit), so it can go on skopeo's command
 * line. */
bool oci_pull_ref_valid(const char *ref);

/* oci_pull_cmd() - the command pulling @ref (valid) for linux/amd64 into
 * the OCI layout @dir under @tag, run as @skopeo.  Return: 0 or -EINVAL
 * when a name is too long. */
int oci_pull_cmd(struct oci_pull_cmd *c, const char *skopeo, const char *ref, const char *dir,
                 const char *tag) __attribute__((warn_unused_result));

/* oci_pull() - runs skopeo (found in PATH) to pull @ref into @dir under
 * @tag, killed if it has not ended within @timeout_ms.  Return: 0; -ENOENT
 * when skopeo is not installed; -ETIMEDOUT; -EIO when skopeo fails, with
 * its last line of stderr in the one-line message. */
int oci_pull(const char *ref, const char *dir, const char *tag, int timeout_ms, char *err,
             size_t errlen) __attribute__((warn_unused_result));

#endif
