/* The resolver's pins as cove-egress remembers them: the nft set holds
 * the truth for packets; this table names each pin (for the log, for
 * `status`, and to carry the ones a new policy still allows into its
 * table).  Bounded: when full, the entry nearest its end is replaced. */
#ifndef COVE_EGRESS_PINS_H
#define COVE_EGRESS_PINS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "netrule.h"
#include "nftgen.h"

#define PINS_MAX 1024

struct pin_entry {
	struct nft_pin pin;
	uint64_t expires_ms;
	char name[NETRULE_NAME_MAX + 1];
};

struct pins {
	struct pin_entry e[PINS_MAX];
	size_t n;
};

/* pins_expire() - drop entries past @now_ms. */
void pins_expire(struct pins *t, uint64_t now_ms);

/* pins_find() - the live entry for (@a, @proto, @port), or NULL. */
struct pin_entry *pins_find(struct pins *t, const struct netaddr *a, uint8_t proto, uint16_t port);

/* pins_note() - record @p for @name, expiring @p->timeout_s from @now_ms.
 * Return: 1 if nft must add it, 2 if nft must replace it (the entry was
 * there with an earlier end), 0 if nft already has it long enough. */
int pins_note(struct pins *t, const struct nft_pin *p, const char *name, uint64_t now_ms);

/* pins_keep() - the entries @policy still allows (their name matches a
 * NAME:PORT rule covering their port), with their remaining timeout, into
 * @out (up to @cap).  @t is unchanged.  Return: count. */
size_t pins_keep(const struct pins *t, const struct netpolicy *policy, uint64_t now_ms,
                 struct nft_pin *out, size_t cap);

/* pins_prune() - drop the entries @policy no longer allows (after the
 * table built from pins_keep() was applied). */
void pins_prune(struct pins *t, const struct netpolicy *policy);

#endif
