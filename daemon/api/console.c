/* The web console's files (console.h). */
#include "daemon/api/console.h"

#include <string.h>

#include "daemon/api/console_assets.h"
#include "daemon/api/console_path.h"
#include "daemon/http/reply.h"

/* No inline script or style, nothing from another origin, no framing:
 * what a sandbox's file name or output could smuggle into the page cannot
 * run, and the page cannot be put inside another site's. */
#define CSP                                                                               \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "       \
	"form-action 'none'; frame-ancestors 'none'"

#define NO_CONSOLE                                                                   \
	"This coved was built without the console's files (daemon/ui/ was empty).\n" \
	"Build coved from a full checkout (make) to get it; see docs/console.md.\n"

bool coved_console_route(const char *method, const char *url)
{
	char name[2];
	return (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) &&
	       coved_console_path(url, name, sizeof(name)) != CONSOLE_NONE;
}

void coved_console_headers(struct MHD_Response *r)
{
	MHD_add_response_header(r, "Content-Security-Policy", CSP);
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "X-Frame-Options", "DENY");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(r, "Cross-Origin-Opener-Policy", "same-origin");
	MHD_add_response_header(r, "Cache-Control", "no-store");
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned int status, const char *ctype,
                              const void *data, size_t len, const char *location, bool gz)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(len, (void *)data, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	coved_console_headers(r);
	MHD_add_response_header(r, "Content-Type", ctype);
	if (location)
		MHD_add_response_header(r, "Location", location);
	if (gz)
		MHD_add_response_header(r, "Content-Encoding", "gzip");
	MHD_add_response_header(r, "Vary", "Accept-Encoding");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* Whether the client takes gzip (a plain look at Accept-Encoding: "gzip"
 * listed, and not as gzip;q=0). */
static bool takes_gzip(struct MHD_Connection *c)
{
	const char *ae = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept-Encoding");
	const char *g = ae ? strstr(ae, "gzip") : NULL;
	return g && strncmp(g + 4, ";q=0", 4) != 0;
}

enum MHD_Result coved_console_reply(struct MHD_Connection *c, const char *url)
{
	static const char moved[] = "see /ui/\n";
	static const char missing[] = "no such console file\n";
	char name[64];
	enum coved_console_kind k = coved_console_path(url, name, sizeof(name));
	if (k == CONSOLE_REDIRECT)
		return answer(c, 308, "text/plain; charset=utf-8", moved, sizeof(moved) - 1, "/ui/",
		              false);
	if (k == CONSOLE_FILE) {
		for (const struct coved_ui_asset *a = coved_ui_assets; a->name; a++) {
			if (strcmp(a->name, name) != 0)
				continue;
			if (a->gz && takes_gzip(c))
				return answer(c, 200, a->ctype, a->gz, a->gz_len, NULL, true);
			return answer(c, 200, a->ctype, a->data, a->len, NULL, false);
		}
		if (strcmp(name, "index.html") == 0)
			return answer(c, 200, "text/plain; charset=utf-8", NO_CONSOLE,
			              sizeof(NO_CONSOLE) - 1, NULL, false);
	}
	return answer(c, 404, "text/plain; charset=utf-8", missing, sizeof(missing) - 1, NULL,
	              false);
}
