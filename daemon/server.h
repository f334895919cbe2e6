/* coved's HTTP server: the Unix socket and the optional TCP listener
 * (TLS when the config names a certificate), each request authenticated
 * and bounded, then handed to the API's routes or to envd. */
#ifndef COVED_SERVER_H
#define COVED_SERVER_H

#include <stddef.h>

struct coved;

/* Binds and serves (threads of libmicrohttpd's): 0, or -errno with err. */
int coved_serve(struct coved *d, char *err, size_t errlen);
void coved_unserve(struct coved *d);

#endif
