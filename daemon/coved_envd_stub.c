/* Weak stand-ins for the envd surface (daemon/envd*.c, ENVD's): with them
 * alone, coved serves the control plane and answers envd paths 501.
 * ENVD's strong definitions replace them at link time. */
#include "coved.h"
#include "coved_envd.h"

#include <string.h>

__attribute__((weak)) bool envd_route(struct MHD_Connection *c, const char *url)
{
	if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "E2b-Sandbox-Id"))
		return true;
	return strncmp(url, "/process.Process/", 17) == 0 ||
	       strncmp(url, "/filesystem.Filesystem/", 23) == 0 || strcmp(url, "/files") == 0 ||
	       strcmp(url, "/health") == 0 || strcmp(url, "/envs") == 0;
}

__attribute__((weak)) enum MHD_Result envd_handle(struct coved *d, struct MHD_Connection *c,
                                                  const char *url, const char *method,
                                                  const char *upload_data, size_t *upload_data_size,
                                                  void **req_cls)
{
	(void)d;
	(void)url;
	(void)method;
	(void)upload_data;
	/* Answer once the whole request is in (its body is dropped). */
	if (!*req_cls) {
		*req_cls = (void *)1;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	return coved_json_error(c, 501, "the envd surface is not built into this coved");
}

__attribute__((weak)) void envd_request_done(struct coved *d, void **req_cls)
{
	(void)d;
	*req_cls = NULL;
}

__attribute__((weak)) int envd_init(struct coved *d)
{
	(void)d;
	return 0;
}

__attribute__((weak)) void envd_fini(struct coved *d)
{
	(void)d;
}
