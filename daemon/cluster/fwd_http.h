/* The HTTP pieces of a forward (forward.c, fwd_call.c): the target node,
 * which headers pass each way, the URL a request goes to, and the curl
 * options every call shares.  Past struct fwd_target, internal to
 * daemon/cluster. */
#ifndef COVED_CLUSTER_FWD_HTTP_H
#define COVED_CLUSTER_FWD_HTTP_H

#include <curl/curl.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a request goes. */
struct fwd_target {
	const char *base;            /* the owner's advertise URL, "http://10.0.0.2:3001" */
	const char *const *headers;  /* "Name: value" lines added (node auth, tenant), NULL-ended;
	                              * NULL: none.  A client's header of one of these names, and
	                              * any X-Cove-Node-Auth, X-Cove-Tenant or X-Cove-Placed it
	                              * sent, is dropped: only the target sets them. */
	unsigned connect_timeout_ms; /* to reach the owner */
	unsigned idle_timeout_ms;    /* no byte either way for this long: the call fails */
};

/* Longest URL a forward builds (base, path and query). */
#define FWD_URL_MAX (64 * 1024)

/* fwd_check_target() - t has an http:// or https:// base and non-zero
 * timeouts.  Return: 0, or -EINVAL and err says which. */
int fwd_check_target(const struct fwd_target *t, char *err, size_t errlen);

/* fwd_name_is() - whether the header name of nlen bytes is lit (any case). */
bool fwd_name_is(const char *name, size_t nlen, const char *lit);

/* fwd_parse_status() - a status line's code ("200 OK", n bytes): 100..999,
 * or -1 when it is not three digits followed by a space or the end. */
long fwd_parse_status(const char *s, size_t n);

/* fwd_parse_length() - a Content-Length value (decimal digits only, at
 * most 18): its value, or -1. */
int64_t fwd_parse_length(const char *s);

/* fwd_pass_back() - whether the owner's answer header name goes back to
 * the client: not hop-by-hop, not one libmicrohttpd sets itself. */
bool fwd_pass_back(const char *name);

/* fwd_request_url() - base, the request's path (decoded, as
 * libmicrohttpd gives it; must start with '/') and its query arguments
 * from c but skip (NULL: none), percent-encoded again, into *out
 * (malloc'ed).  Return: 0, -EINVAL (a bad path, over FWD_URL_MAX) or
 * -ENOMEM. */
int fwd_request_url(struct MHD_Connection *c, const char *base, const char *path, const char *skip,
                    char **out);

/* fwd_request_headers() - the request's headers on c that pass on (not
 * hop-by-hop, none the target sets, no X-Cove-Node-Auth, X-Cove-Tenant
 * or X-Cove-Placed), then t's own, into a new list *out.
 * Return: 0 or -ENOMEM. */
int fwd_request_headers(struct MHD_Connection *c, const struct fwd_target *t,
                        struct curl_slist **out);

/* fwd_lines_headers() - the same from "Name: value" lines (NULL-ended,
 * may be NULL); a line without a colon is left out. */
int fwd_lines_headers(const char *const *lines, const struct fwd_target *t,
                      struct curl_slist **out);

/* fwd_easy_common() - the options every forward's handle e has: url,
 * headers (kept by the caller until e is done), HTTP/1.1 over http or
 * https only, no redirects, no signals, t's connect timeout, errors
 * into errbuf (CURL_ERROR_SIZE bytes).  Return: 0 or -ENOMEM. */
int fwd_easy_common(CURL *e, const struct fwd_target *t, const char *url,
                    const struct curl_slist *headers, char *errbuf);

/* fwd_curl_init() - curl_global_init, once, before the first handle. */
void fwd_curl_init(void);

#endif
