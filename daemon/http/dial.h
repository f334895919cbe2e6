/* Where coved's outgoing HTTP (webhooks, an OTLP export to a caller's URL)
 * may connect: not the host's loopback, private, link-local (cloud
 * metadata) or other always-denied ranges (common/netrule.h) unless the
 * config's webhook_private_ok says so.  Checked in curl's open-socket
 * callback, on the address it is about to dial, so a name that resolves
 * there (or rebinds) is caught too. */
#ifndef COVE_DAEMON_HTTP_DIAL_H
#define COVE_DAEMON_HTTP_DIAL_H

#include <curl/curl.h>
#include <stdbool.h>

struct coved_dial {
	bool private_ok;  /* every address may be dialled */
	char refused[64]; /* the address refused, "" when none */
};

/* Sets c's open-socket callback to coved_dial_open with d (which must
 * outlive the transfer). */
void coved_dial_limit(CURL *c, struct coved_dial *d);

/* CURLOPT_OPENSOCKETFUNCTION: a socket for an allowed address, else
 * CURL_SOCKET_BAD with the address in ((struct coved_dial *)cls)->refused. */
curl_socket_t coved_dial_open(void *cls, curlsocktype purpose, struct curl_sockaddr *a);

#endif
