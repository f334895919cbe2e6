/* The loops on either end of the nft keeper's pairs (egress/nftd.h): the
 * keeper's, which holds the table and the ctl listener, and the parser's
 * watch on the keeper. */
#ifndef COVE_EGRESS_KEEPER_H
#define COVE_EGRESS_KEEPER_H

#include "egress.h"
#include "nftd.h"

/* keeper_main() - the keeper, in the child of nftd_fork(): close what it
 * does not need, confine (@seccomp_log as confine()), say ready, serve
 * until the parser goes.  Return: main()'s exit status. */
int keeper_main(struct egress *e, int seccomp_log);

/* keeper_watch() - in the parser: serve the push pair (forwarded ctl
 * requests) and stop the loop when the keeper goes.  0 or -errno. */
int keeper_watch(struct egress *e) __attribute__((warn_unused_result));

/* keeper_apply_pins() - in the keeper: note @m's pins and add (or refresh)
 * the new ones in one transaction each.  Return: 0 or -errno. */
int keeper_apply_pins(struct egress *e, const struct nftd_msg *m)
    __attribute__((warn_unused_result));

#endif
