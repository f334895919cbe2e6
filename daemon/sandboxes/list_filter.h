/* The list's filters (list_filter.c): which sandboxes GET /v2/sandboxes
 * (and /sandboxes, /sandboxes/counts) shows.  Pure (unit-tested, fuzzed
 * through the metadata parser); table.c applies them under a record's
 * lock. */
#ifndef COVED_SANDBOXES_LIST_FILTER_H
#define COVED_SANDBOXES_LIST_FILTER_H

#include <jansson.h>
#include <stdbool.h>

/* What a listing asks for; a NULL or empty field asks nothing. */
struct coved_list_filter {
	/* "running,paused": one of these state names */
	const char *states;
	/* "k1=v1&k2=v2" (E2B's query, one URL decoding undone by the server):
	 * every pair, each part form-decoded (%XX, '+' a space), then
	 * percent-decoded (the SDK's encodeURIComponent of each key and value) */
	const char *metadata;
	/* exactly this template */
	const char *template_id;
};

/* coved_list_filter_match() - whether a sandbox in state (a state name)
 * with template_id and metadata (an object of strings; NULL: none)
 * passes f.  With no states asked, running, paused and dead pass.  A
 * metadata pair without '=' or with a bad %XX matches nothing. */
bool coved_list_filter_match(const struct coved_list_filter *f, const char *state,
                             const char *template_id, const json_t *metadata);

#endif
