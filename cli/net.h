/* cove net and cove logs (net.c), and the network options the starting
 * commands share. Returns the process exit status: 0, 1 when
 * the request failed, 2 for bad usage. */
#ifndef COVE_CLI_NET_H
#define COVE_CLI_NET_H

#include <stdbool.h>

#include "cli/options.h"
#include "cove.h"

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

int cli_net(int argc, char **argv);
int cli_logs(int argc, char **argv);

#endif
