/* cove cluster status|drain (cluster.c): coved's cluster view and the
 * drain flag, asked of coved over its Unix socket (docs/cluster.md).  The
 * key reading and the table are pure, for the unit tests. */
#ifndef COVE_CLI_CLUSTER_H
#define COVE_CLI_CLUSTER_H

#include <stddef.h>
#include <stdio.h>

/* The longest API key the command sends. */
#define CLI_CLUSTER_KEY_MAX 256

/* cli_cluster() - `cove cluster ...`; argv[0] is "cluster".
 * Return: the exit status: 0, 1 when the call failed, 2 for bad usage. */
int cli_cluster(int argc, char **argv);

/* cli_cluster_key() - the API key to send.
 * @key_file: a file in the API keys file's format (daemon/conf/keys.h);
 *            its first key is taken; refused when group or others may
 *            read it.  NULL: @env is the key.
 * @env: $COVE_API_KEY's value, or NULL.
 * @key: out, @len bytes (a key longer than len - 1 is refused).
 * Return: 0, or -errno with a one-line err. */
int cli_cluster_key(const char *key_file, const char *env, char *key, size_t len, char *err,
                    size_t errlen) __attribute__((warn_unused_result));

/* cli_cluster_table() - prints GET /cluster's document (docs/cluster.md)
 * to @out: a row per node, then the totals of the nodes that are not
 * lost, then a line when this coved is fenced.  Strings from the document
 * are printed with their control characters as '?'.
 * Return: 0, or -EINVAL with err when doc is not such a document (nothing
 * is printed then). */
int cli_cluster_table(FILE *out, const char *doc, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
