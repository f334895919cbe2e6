/* Names in a layer: a tar entry's name made an ext4w path (or refused),
 * and the set of paths one layer has written, which its whiteouts and
 * opaque markers must leave alone. */
#ifndef COVE_IMAGE_LAYER_PATH_H
#define COVE_IMAGE_LAYER_PATH_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* layer_norm() - a tar entry's name as an ext4w path (ext4w.h): "./"
 * and "." components and repeated or trailing '/' dropped; "" is the root.
 * @out: PATH_MAX bytes
 * @why: on refusal, the reason ("an absolute name", "climbs out of the
 *       root", "an empty name", "longer than PATH_MAX", "a component
 *       longer than 255 bytes")
 *
 * Return: 0, or -EINVAL (-ENAMETOOLONG for lengths). */
int layer_norm(const char *name, char *out, const char **why);

/* Most bytes of names one layer's set holds (a hostile layer of long
 * names is refused past it). */
#define LAYER_PATHSET_MAX (64u << 20)

struct pathset {
	char **slot; /* open addressing; NULL: free */
	size_t cap;  /* a power of two, 0 before the first add */
	size_t n;
	size_t bytes;
	uint64_t seed; /* the hash's start, random */
};

/* Adds path (copied): 0, -ENOMEM, or -E2BIG past LAYER_PATHSET_MAX. */
int pathset_add(struct pathset *s, const char *path);

/* Whether path was added. */
int pathset_has(const struct pathset *s, const char *path);

/* Frees the copies; s is empty again. */
void pathset_free(struct pathset *s);

#endif
