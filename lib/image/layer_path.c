/* Names in a layer; see layer_path.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lib/image/layer_path.h"

#define NAME_MAX_EXT4 255

int layer_norm(const char *name, char *out, const char **why)
{
	size_t n = name ? strnlen(name, PATH_MAX) : 0, o = 0;

	*why = NULL;
	out[0] = 0;
	if (n == 0)
		*why = "an empty name";
	else if (n >= PATH_MAX)
		*why = "longer than PATH_MAX";
	else if (name[0] == '/')
		*why = "an absolute name";
	for (size_t i = 0; !*why && i < n;) {
		size_t j = i;
		while (j < n && name[j] != '/')
			j++;
		size_t c = j - i;
		if (c == 2 && name[i] == '.' && name[i + 1] == '.') {
			*why = "climbs out of the root";
		} else if (c > NAME_MAX_EXT4) {
			*why = "a component longer than 255 bytes";
		} else if (c && !(c == 1 && name[i] == '.')) {
			if (o)
				out[o++] = '/';
			memcpy(out + o, name + i, c);
			o += c;
		}
		i = j + 1;
	}
	if (*why) {
		out[0] = 0;
		return n >= PATH_MAX || !strncmp(*why, "a component", 11) ? -ENAMETOOLONG : -EINVAL;
	}
	out[o] = 0;
	return 0;
}

/* FNV-1a from a per-set random start, then mixed: names a layer chose to
 * collide for one set do not collide for the next. */
static uint64_t hash(uint64_t seed, const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

static size_t probe(uint64_t seed, char *const *slot, size_t cap, const char *path)
{
	size_t i = (size_t)hash(seed, path) & (cap - 1);
	while (slot[i] && strcmp(slot[i], path))
		i = (i + 1) & (cap - 1);
	return i;
}

static int grow(struct pathset *s)
{
	size_t cap = s->cap ? 2 * s->cap : 1024;
	char **slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	if (!s->cap && getrandom(&s->seed, sizeof(s->seed), GRND_NONBLOCK) != sizeof(s->seed))
		s->seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)slot;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slot[i])
			slot[probe(s->seed, slot, cap, s->slot[i])] = s->slot[i];
	free(s->slot);
	s->slot = slot;
	s->cap = cap;
	return 0;
}

int pathset_add(struct pathset *s, const char *path)
{
	size_t len = strlen(path) + 1;
	if ((s->n + 1) * 2 > s->cap) { /* at most half full */
		int rc = grow(s);
		if (rc)
			return rc;
	}
	size_t i = probe(s->seed, s->slot, s->cap, path);
	if (s->slot[i])
		return 0;
	if (s->bytes + len > LAYER_PATHSET_MAX)
		return -E2BIG;
	s->slot[i] = malloc(len);
	if (!s->slot[i])
		return -ENOMEM;
	memcpy(s->slot[i], path, len);
	s->bytes += len;
	s->n++;
	return 0;
}

int pathset_has(const struct pathset *s, const char *path)
{
	return s->cap && s->slot[probe(s->seed, s->slot, s->cap, path)] != NULL;
}

void pathset_free(struct pathset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slot[i]);
	free(s->slot);
	*s = (struct pathset){ .slot = NULL };
}
