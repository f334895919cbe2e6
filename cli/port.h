/* cove port (port.c), and the local listeners that `cove run --publish`
 * shares with it: a TCP listener on the host whose connections go to a
 * port in the sandbox through its agent (lib/agent/port.h), no NIC, no
 * root.  cli_port returns the process exit status: 0 (stopped by a
 * signal), 1 when the sandbox or the listener failed, 2 for bad usage. */
#ifndef COVE_CLI_PORT_H
#define COVE_CLI_PORT_H

#include <stddef.h>
#include <stdint.h>

struct cove_sandbox;
struct cli_fwd;

#define CLI_FWD_CONNS_MAX 256  /* connections a listener relays at once */
#define CLI_FWD_IDLE_S    3600 /* a connection silent both ways this long ends */

/* cli_fwd_start() - listens on addr (IPv4, host order) port (0: any) and
 * relays each connection to guest_port in sb, on threads of its own,
 * until cli_fwd_stop.  sb must outlive it.  name: for error lines.
 * Return: the listener, or NULL with one line in err. */
struct cli_fwd *cli_fwd_start(struct cove_sandbox *sb, const char *name, uint32_t addr,
                              uint16_t port, uint16_t guest_port, unsigned idle_s, char *err,
                              size_t errlen);
/* cli_fwd_port() - the port it listens on (port 0's pick). */
uint16_t cli_fwd_port(const struct cli_fwd *f);
/* cli_fwd_stop() - closes the listener, ends its connections (waiting at
 * most 5 s for them) and frees f (NULL: nothing). */
void cli_fwd_stop(struct cli_fwd *f);

int cli_port(int argc, char **argv);

#endif
