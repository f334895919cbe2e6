#include "nft.h"

#include <errno.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <string.h>

#include "errf.h"

struct nft_ctx *enft_open(void)
{
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx)
		return NULL;
	if (nft_ctx_buffer_output(ctx) || nft_ctx_buffer_error(ctx)) {
		nft_ctx_free(ctx);
		return NULL;
	}
	/* Numbers only: symbolic names would make libnftables read
	 * /etc/protocols or /etc/services, which the jail does not have. */
	nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_NUMERIC_ALL);
	return ctx;
}

void enft_close(struct nft_ctx *ctx)
{
	if (ctx)
		nft_ctx_free(ctx);
}

int enft_run(struct nft_ctx *ctx, const char *cmds, char *err, size_t errlen)
{
	int r = nft_run_cmd_from_buffer(ctx, cmds);
	const char *e = nft_ctx_get_error_buffer(ctx);
	if (r == 0)
		return 0;
	/* The first "Error:" line, without the echoed command. */
	const char *line = e ? strstr(e, "Error: ") : NULL;
	if (!line)
		line = e && *e ? e : "libnftables refused the ruleset";
	size_t n = strcspn(line, "\n");
	return errf(err, errlen, -EINVAL, "nft: %.*s", (int)(n > 200 ? 200 : n), line);
}
