/* The options the cove commands share (options.c): numbers, sizes,
 * durations, the configuration's and exec's options, names. */
#ifndef COVE_CLI_OPTIONS_H
#define COVE_CLI_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "cove.h"

#define CLI_MAX_LIST 64

/* getopt_long codes of the long-only options the commands share. */
enum {
	CLI_O_CPUS = 256,
	CLI_O_MEMORY,
	CLI_O_IMAGE,
	CLI_O_KERNEL,
	CLI_O_TIMEOUT,
	CLI_O_HOSTNAME,
	CLI_O_NAME,
	CLI_O_CPU_QUOTA,
	CLI_O_PIDS_MAX,
	CLI_O_DISK_SIZE,
	CLI_O_DISK_RATE,
	CLI_O_DISK_IOPS,
	CLI_O_TTL,
	CLI_O_NET,
	CLI_O_ALLOW,
	CLI_O_DENY,
	CLI_O_PUBLISH,
	CLI_O_DNS,
	CLI_O_NET_LIMIT,
	CLI_O_PROXY_RULES,
	CLI_O_FIRST_FREE, /* commands number their own options from here */
};

/* The limit options (cli_config_option handles them), for a command's
 * struct option table. */
#define CLI_LIMIT_OPTIONS                                              \
	{ "cpu-quota", required_argument, NULL, CLI_O_CPU_QUOTA },     \
	    { "pids-max", required_argument, NULL, CLI_O_PIDS_MAX },   \
	    { "disk-size", required_argument, NULL, CLI_O_DISK_SIZE }, \
	    { "disk-rate", required_argument, NULL, CLI_O_DISK_RATE }, \
	    { "disk-iops", required_argument, NULL, CLI_O_DISK_IOPS }, \
	{                                                              \
		"ttl", required_argument, NULL, CLI_O_TTL              \
	}

/* Their usage lines. */
#define CLI_LIMIT_USAGE                                                                  \
	"  limits: --cpu-quota CPUS (0.5: half a CPU)  --pids-max N  --disk-size SIZE\n" \
	"          --disk-rate BYTES/S  --disk-iops N  --ttl 30s|5m|2h|SECONDS\n"        \
	"          (SIZE and BYTES/S take K, M, G, T suffixes: powers of 1024)\n"

/* Parses a size: a decimal number with an optional K, M, G or T suffix
 * (powers of 1024; "16M", "2G", "512").  -1 when s is not one or exceeds
 * max. */
int cli_parse_size(const char *s, uint64_t max, uint64_t *out);

/* Parses a duration: seconds, or a number with s, m, h or d.  -1 when s is
 * not one or exceeds max seconds. */
int cli_parse_duration(const char *s, uint64_t max, uint64_t *out);

/* Short options of struct cli_exec (-e K=V, -w DIR, -u USER, -i, -t). */
#define CLI_EXEC_SHORT "e:w:u:it"

/* Parses a decimal number 0..max; -1 when s is not one. */
int cli_parse_num(const char *s, unsigned long max, unsigned long *out);

/* Handles one of --cpus, --memory, --image, --kernel, --hostname and the
 * limit options.  Returns 1 when o was one (cfg
 * updated; a resolved image path is kept in *image for the caller to
 * free), 0 when o is not one of them, -1 on bad input (message printed,
 * prefixed with prog). */
int cli_config_option(struct cove_config *cfg, char **image, int o, const char *arg,
                      const char *prog);

/* A sandbox name given on the command line: 0, or -1 with a message. */
int cli_check_name(const char *name, const char *prog);

/* A host name derived from a sandbox name ('_' is not allowed in host
 * names); out must hold COVE_NAME_MAX + 1 bytes. */
void cli_hostname_from_name(const char *name, char *out);

struct cli_exec {
	const char *env[CLI_MAX_LIST + 1];
	int nenv;
	const char *workdir;
	const char *user; /* NULL: the sandbox's default */
	unsigned long timeout_s;
	bool interactive, tty;
};

/* Handles one of --timeout, -e, -w, -u, -i, -t; returns as
 * cli_config_option. */
int cli_exec_option(struct cli_exec *x, int o, const char *arg, const char *prog);

/* Checks what cannot be checked option by option (-t needs a terminal):
 * 0, or -1 with a message. */
int cli_exec_check(const struct cli_exec *x, const char *prog);

#endif
