/* The console's static files, compiled into coved (daemon/ui/, embedded by
 * scripts/ui-embed.c into build/gen/ui_assets.c). */
#ifndef COVED_API_CONSOLE_ASSETS_H
#define COVED_API_CONSOLE_ASSETS_H

#include <stddef.h>

struct coved_ui_asset {
	const char *name;  /* base name: "index.html" */
	const char *ctype; /* its Content-Type */
	const unsigned char *data;
	size_t len;
	const unsigned char *gz; /* gzipped, or NULL when that is not smaller */
	size_t gz_len;
};

/* Ended by an entry whose name is NULL. */
extern const struct coved_ui_asset coved_ui_assets[];
/* Their sizes as sent: raw, and gzipped where that is smaller. */
extern const size_t coved_ui_bytes, coved_ui_gzip_bytes;

#endif
