/* The line `cove doctor` prints about coved: how many tenants its keys
 * file names and what its TCP listener is (none, plain HTTP or TLS).
 * Header-only: cove does not link the daemon, and doctor.c includes it
 * alone.  It reads coved's config where coved does (/etc/coved/coved.json;
 * COVED_CONFIG names another) and the keys file the config names. */
#ifndef COVED_DOCTOR_H
#define COVED_DOCTOR_H

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tenant_name.h"

static char coved_doctor_text[400];

/* Tenants in a keys file: distinct TENANT:KEY names plus one per bare key
 * (coved_keys_load's rules), or -errno. */
static int coved_doctor_tenants(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[512], names[64][COVED_TENANT_LEN + 1];
	int n = 0, named = 0;
	while (fgets(line, sizeof(line), f)) {
		size_t l = strcspn(line, "\r\n");
		if (l == 0 || line[0] == '#')
			continue;
		char *colon = memchr(line, ':', l);
		size_t tl = colon ? (size_t)(colon - line) : 0;
		if (!colon || !coved_tenant_name_ok(line, tl)) {
			n++;
			continue;
		}
		int i = 0;
		while (i < named && (strlen(names[i]) != tl || strncmp(names[i], line, tl)))
			i++;
		if (i == named && named < 64) {
			snprintf(names[named++], sizeof(names[0]), "%.*s", (int)tl, line);
			n++;
		}
	}
	explicit_bzero(line, sizeof(line));
	fclose(f);
	return n;
}

/* coved_doctor_check() - fills coved_doctor_text.
 * Return: 0 (ok), 1 (worth a warning: a plain-HTTP TCP listener, or a
 * config that cannot be read). */
static int coved_doctor_check(void)
{
	const char *path =
	    getenv("COVED_CONFIG") ? getenv("COVED_CONFIG") : "/etc/coved/coved.json";
	json_t *o = NULL;
	if (access(path, F_OK) == 0) {
		json_error_t je;
		if (!(o = json_load_file(path, 0, &je)) || !json_is_object(o)) {
			snprintf(coved_doctor_text, sizeof(coved_doctor_text),
			         "cannot tell: config %s: %s", path, o ? "not an object" : je.text);
			json_decref(o);
			return 1;
		}
	}
	const char *keys = json_string_value(json_object_get(o, "api_keys_file"));
	const char *tcp = json_string_value(json_object_get(o, "tcp"));
	bool tls = json_is_string(json_object_get(o, "tls_cert"));
	if (!keys)
		keys = "/etc/coved/api-keys";
	char tenants[200];
	int n = coved_doctor_tenants(keys);
	if (n >= 0)
		snprintf(tenants, sizeof(tenants), "%d tenant%s", n, n == 1 ? "" : "s");
	else
		snprintf(tenants, sizeof(tenants), "tenants unknown (keys file %s: %s)", keys,
		         strerror(-n));
	snprintf(coved_doctor_text, sizeof(coved_doctor_text), "%s%s, TCP listener: %s%s%s",
	         o ? "" : "no config (coved's defaults): ", tenants,
	         !tcp  ? "none"
	         : tls ? "TLS on "
	               : "plain HTTP on ",
	         tcp ? tcp : "", tcp && !tls ? " (keys and tokens travel in cleartext)" : "");
	json_decref(o);
	return tcp && !tls;
}

#endif
