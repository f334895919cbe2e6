/* A sandbox's usage samples over HTTP. */
#include "daemon/api/sb_metrics.h"

#include <stdint.h>

#include "daemon/http/reply.h"
#include "daemon/sandboxes/sampler.h"
#include "daemon/sandboxes/samples.h"
#include "daemon/sandboxes/sandbox.h"

enum MHD_Result coved_sb_metrics_reply(struct coved *d, struct MHD_Connection *c,
                                       struct coved_sb *sb)
{
	const char *start = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "start");
	const char *end = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "end");
	int64_t s, e;
	char msg[128];
	if (coved_metrics_range(start, end, &s, &e, msg, sizeof(msg)) < 0)
		return coved_json_error(c, 400, msg);
	json_t *a = coved_sampler_json(d, coved_sb_id(sb), s, e);
	if (!a)
		return coved_json_error(c, 500, "out of memory");
	return coved_json_reply(c, 200, a);
}
