/* The one map from an errno to the HTTP status coved answers with.  The
 * same errno means different things to different operations (a missing
 * file is the client's 404, a network change that finds nothing is the
 * server's fault), so each row names the operations it holds for. */
#ifndef COVED_HTTP_STATUS_H
#define COVED_HTTP_STATUS_H

enum http_op {
	HTTP_OP_START = 1 << 0,  /* a create's boot or restore (libcove) */
	HTTP_OP_RESUME = 1 << 1, /* a resume's restore */
	HTTP_OP_NET = 1 << 2,    /* a running sandbox's network policy change */
	HTTP_OP_FILE = 1 << 3,   /* a guest file read or written (envd /files) */
};

/* http_status_of() - the status for err (negative or positive errno) from
 * op: the table's row, else 500. */
unsigned int http_status_of(int err, enum http_op op);

#endif
