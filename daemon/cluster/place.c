/* Best-of-K placement (place.h). */
#include "daemon/cluster/place.h"

#include <stdlib.h>

bool cl_fits(const struct cl_node *n, uint64_t vcpus, uint64_t memory_mib)
{
	return n->used_vcpus <= n->vcpus && vcpus <= n->vcpus - n->used_vcpus &&
	       n->used_memory_mib <= n->memory_mib &&
	       memory_mib <= n->memory_mib - n->used_memory_mib;
}

/* xorshift64*: placement needs spread, not secrecy. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

static double load_after(const struct cl_node *n, uint64_t vcpus, uint64_t memory_mib)
{
	double c = n->vcpus ? (double)(n->used_vcpus + vcpus) / (double)n->vcpus : 1.0;
	double m =
	    n->memory_mib ? (double)(n->used_memory_mib + memory_mib) / (double)n->memory_mib : 1.0;
	double l = c > m ? c : m;
	return n->has_template ? l - 0.25 : l;
}

size_t cl_pick(const struct cl_node *nodes, size_t n, uint64_t vcpus, uint64_t memory_mib, size_t k,
               uint64_t *seed, size_t *out)
{
	/* Reservoir sampling: k uniform picks among the eligible in one pass,
	 * no allocation, whatever n is. */
	size_t got = 0, seen = 0;
	for (size_t i = 0; i < n; i++) {
		if (!nodes[i].ready || !cl_fits(&nodes[i], vcpus, memory_mib))
			continue;
		seen++;
		if (got < k) {
			out[got++] = i;
		} else {
			uint64_t j = next_rand(seed) % seen;
			if (j < k)
				out[j] = i;
		}
	}
	/* Best first: insertion sort of at most k. */
	for (size_t i = 1; i < got; i++) {
		size_t v = out[i], j = i;
		double lv = load_after(&nodes[v], vcpus, memory_mib);
		while (j > 0 && load_after(&nodes[out[j - 1]], vcpus, memory_mib) > lv) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = v;
	}
	return got;
}
