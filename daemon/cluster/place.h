/* Placement: where a new sandbox goes among the cluster's nodes
 * (docs/cluster.md, "Placement").  Pure: the caller has read the nodes. */
#ifndef COVED_CLUSTER_PLACE_H
#define COVED_CLUSTER_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_PICK_K 3 /* best of K, as E2B's orchestrator samples */

struct cl_node {
	uint64_t vcpus, memory_mib;           /* capacity */
	uint64_t used_vcpus, used_memory_mib; /* committed */
	bool ready;                           /* lease live, not draining, not fenced */
	bool has_template;                    /* holds the create's template already */
};

/* cl_fits() - whether node n has room for vcpus and memory_mib more. */
bool cl_fits(const struct cl_node *n, uint64_t vcpus, uint64_t memory_mib);

/* cl_pick() - best of k: up to k distinct nodes sampled at random (from
 * *seed, advanced) among the ready ones with room for vcpus and
 * memory_mib, ordered best first into out (indexes into nodes): the
 * lowest load after the add (the larger of the CPU and memory shares),
 * a node that holds the template counting a quarter less.
 * Return: how many were written to out (0: no node can take it). */
size_t cl_pick(const struct cl_node *nodes, size_t n, uint64_t vcpus, uint64_t memory_mib, size_t k,
               uint64_t *seed, size_t *out);

#endif
