/* The credential rules in force (ctl {"op":"proxy"}, egress/ctl.c):
 *   {"op":"proxy", "rules": {<a rules file, common/proxyrule.h>},
 *    "secrets": {"NAME": "value", ...}, "upstream_ca": "PEM" (optional)}
 * Every source the rules name needs a value fit for a header, and no
 * value may come without a source; the upstream trust is set; only then
 * do rules and secrets replace the old ones (wiped), all at once.  The
 * request's secret strings are wiped once taken. */
#ifndef COVE_EGRESS_PROXYSET_H
#define COVE_EGRESS_PROXYSET_H

#include <jansson.h>
#include <stddef.h>

#include "egress.h"

/* egress_set_proxy() - as above.  0, or -errno with one line in @err. */
int egress_set_proxy(struct egress *e, json_t *req, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* egress_proxy_host() - the rule whose hosts cover @name, or NULL. */
const struct proxy_rule *egress_proxy_host(const struct egress *e, const char *name);

/* egress_proxy_clear() - drop the rules and wipe the secrets. */
void egress_proxy_clear(struct egress *e);

#endif
