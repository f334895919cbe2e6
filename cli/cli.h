/* cove subcommands.  Each returns the process exit status: 0, 1 when the
 * request failed, 2 for bad usage; run and exec return the command's. */
#ifndef COVE_CLI_H
#define COVE_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "cove.h"
#include "text.h"

int cli_run(int argc, char **argv);
int cli_start(int argc, char **argv);
int cli_exec(int argc, char **argv);
int cli_cp(int argc, char **argv);
int cli_stop(int argc, char **argv);
int cli_ls(int argc, char **argv);
int cli_snapshot(int argc, char **argv);
int cli_restore(int argc, char **argv);
int cli_fork(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_net(int argc, char **argv);
int cli_logs(int argc, char **argv);
int cli_template(int argc, char **argv);

struct cove_template_io;
/* Template progress lines to stderr (prefixed with prog) and, with
 * steps_output, the steps' output to our stdout and stderr. */
void cli_template_io(struct cove_template_io *io, const char *prog, bool steps_output);

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

/* The network options (cli_net_option handles them). */
#define CLI_NET_OPTIONS                                                   \
	{ "net", required_argument, NULL, CLI_O_NET },                    \
	    { "allow", required_argument, NULL, CLI_O_ALLOW },            \
	    { "deny", required_argument, NULL, CLI_O_DENY },              \
	    { "publish", required_argument, NULL, CLI_O_PUBLISH },        \
	    { "dns", required_argument, NULL, CLI_O_DNS },                \
	    { "net-limit", required_argument, NULL, CLI_O_NET_LIMIT },    \
	{                                                                 \
		"proxy-rules", required_argument, NULL, CLI_O_PROXY_RULES \
	}

#define CLI_NET_USAGE                                                                  \
	"  network (none of these: no NIC; they need root):\n"                         \
	"          --net none|open  --allow RULE...  --deny CIDR[:PORT[-HI]]...\n"     \
	"          --publish [ADDR:]HOSTPORT:GUESTPORT...  --dns IP[:PORT]...\n"       \
	"          --net-limit rx_bps=N,tx_bps=N,rx_pps=N,tx_pps=N\n"                  \
	"          (RULE: IP, CIDR, CIDR:PORT, CIDR:LO-HI, NAME, *.NAME, NAME:PORT)\n" \
	"          --proxy-rules FILE.json  credentials the egress proxy injects\n"

/* What the network options gave; the lists stay NULL-terminated. */
/* Where a guest's stdout or stderr goes (exec_io.c): to a terminal
 * through the filter that keeps only SGR colour of escape sequences
 * (guest text is not trusted with a terminal).  cli_stream_init picks
 * the filter by isatty(fd); cli_stream_write drops the output when our
 * reader went away. */
struct cli_stream {
	int fd;
	bool filter;
	struct text_filter f;
};
void cli_stream_init(struct cli_stream *o, int fd);
void cli_stream_write(struct cli_stream *o, const void *data, size_t len);

struct cli_net {
	bool any;      /* a network option was given */
	bool mode_set; /* --net */
	enum cove_net_mode mode;
	const char *allow[COVE_NET_RULES_MAX + 1], *deny[COVE_NET_RULES_MAX + 1];
	const char *publish[CLI_MAX_LIST + 1], *dns[CLI_MAX_LIST + 1];
	int nallow, ndeny, npublish, ndns;
	const char *limits;
	const char *proxy_rules; /* --proxy-rules */
};

/* Handles one network option (restrict: only --net, --allow and --deny,
 * for cove net); returns as cli_config_option. */
int cli_net_option(struct cli_net *n, int o, const char *arg, const char *prog, bool restrict_);

/* Puts what n holds into cfg (a network exactly when an option was
 * given: --net's mode, else rules). */
void cli_net_apply(struct cli_net *n, struct cove_config *cfg);

/* Parses a size: a decimal number with an optional K, M, G or T suffix
 * (powers of 1024; "16M", "2G", "512").  -1 when s is not one or exceeds
 * max. */
int cli_parse_size(const char *s, uint64_t max, uint64_t *out);

/* Parses a duration: seconds, or a number with s, m, h or d.  -1 when s is
 * not one or exceeds max seconds. */
int cli_parse_duration(const char *s, uint64_t max, uint64_t *out);

/* Short options of struct cli_exec (-e K=V, -w DIR, -i, -t). */
#define CLI_EXEC_SHORT "e:w:it"

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
	unsigned long timeout_s;
	bool interactive, tty;
};

/* Handles one of --timeout, -e, -w, -i, -t; returns as
 * cli_config_option. */
int cli_exec_option(struct cli_exec *x, int o, const char *arg, const char *prog);

/* Checks what cannot be checked option by option (-t needs a terminal):
 * 0, or -1 with a message. */
int cli_exec_check(const struct cli_exec *x, const char *prog);

/* Runs argv (NULL-terminated) in sb with our stdin, stdout and stderr
 * forwarded, a raw terminal under -t, signals forwarded to the command.
 * Returns the exit status cove run defines: the command's, 128+N for
 * signal N, 124 on --timeout, 127/126 when it cannot be found or run, 125
 * when the sandbox failed.  *ran (when not NULL) tells whether the
 * command ran at all. */
int cli_exec_command(struct cove_sandbox *sb, const struct cli_exec *x, char **argv,
                     const char *prog, bool *ran);

#endif
