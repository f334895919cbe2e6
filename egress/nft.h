/* libnftables for cove-egress: every change is one nft_run_cmd_from_buffer
 * call, which libnftables sends as one netlink batch (one transaction: the
 * table is wholly old or wholly new).  Never a shell, never `nft`. */
#ifndef COVE_EGRESS_NFT_H
#define COVE_EGRESS_NFT_H

#include <stddef.h>

struct nft_ctx;

/* enft_open() - a libnftables context with buffered output and errors.
 * Call before confinement.  NULL on failure. */
struct nft_ctx *enft_open(void);
void enft_close(struct nft_ctx *ctx);

/* enft_run() - apply @cmds as one transaction.  On failure @err gets
 * libnftables' first error line.  Return: 0 or -EINVAL.
 * #syscalls: socket(AF_NETLINK) sendmsg recvmsg (libnftables' batch) */
int enft_run(struct nft_ctx *ctx, const char *cmds, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
