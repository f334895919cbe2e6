/* libFuzzer target: a pooled cove-vmm's start request (vmm/pool.c): any
 * bytes as one line through vmm_pool_parse, and a parsed request's argv
 * through vmm_config_parse, as the pooled VMM does.  Neither may crash;
 * a refusal has a one-line message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_flags.h"
#include "pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > VMM_POOL_LINE_MAX)
		return 0;
	char *line = malloc(size + 1);
	if (!line)
		return 0;
	memcpy(line, data, size);
	line[size] = 0;
	struct vmm_pool_req req;
	memset(&req, 0, sizeof(req));
	req.conn = req.passed = -1;
	char err[512] = "";
	if (vmm_pool_parse(line, &req, err, sizeof(err)) == 0) {
		struct vmm_config c;
		char err2[512];
		(void)!vmm_config_parse(&c, req.argc, req.argv, err2, sizeof(err2));
		vmm_config_free(&c);
		vmm_pool_req_free(&req);
	} else if (!err[0] || strchr(err, '\n')) {
		abort();
	}
	free(line);
	return 0;
}
