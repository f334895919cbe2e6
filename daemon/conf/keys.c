/* coved's API keys file (key to tenant), tenant names and the
 * constant-time compare that keys and tokens go through. */
#include "daemon/conf/keys.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errf.h"

/* A bare key's tenant: a name that says which key without being it. */
static void bare_tenant(const char *key, char *out, size_t len)
{
	unsigned char h[SHA256_DIGEST_LENGTH];
	SHA256((const unsigned char *)key, strlen(key), h);
	snprintf(out, len, "key-%02x%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3], h[4], h[5]);
	explicit_bzero(h, sizeof(h));
}

/* One line (no newline): *k filled, or -EINVAL with why. */
static int key_line(char *line, struct coved_key *k, const char **why)
{
	size_t l = strlen(line);
	while (l && (line[l - 1] == ' ' || line[l - 1] == '\t'))
		line[--l] = 0;
	char *colon = strchr(line, ':');
	const char *key = line;
	if (colon) {
		size_t tl = (size_t)(colon - line);
		if (!coved_tenant_name_ok(line, tl)) {
			*why = "the tenant before ':' is not 1 to 64 of A-Z a-z 0-9 _ . -";
			return -EINVAL;
		}
		memcpy(k->tenant, line, tl);
		k->tenant[tl] = 0;
		key = colon + 1;
	}
	if (strlen(key) < 16) {
		*why = "a key is shorter than 16 bytes";
		return -EINVAL;
	}
	for (const char *p = key; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f) {
			*why = "a key holds a space or a byte that is not printable ASCII";
			return -EINVAL;
		}
	if (!colon)
		bare_tenant(key, k->tenant, sizeof(k->tenant));
	k->key = strdup(key);
	if (!k->key) {
		*why = "out of memory";
		return -ENOMEM;
	}
	return 0;
}

void coved_keys_free(struct coved_key *keys, size_t n)
{
	for (size_t i = 0; keys && i < n; i++) {
		explicit_bzero(keys[i].key, strlen(keys[i].key));
		free(keys[i].key);
	}
	free(keys);
}

int coved_keys_load(const char *path, struct coved_key **keys, size_t *n, char *err, size_t errlen)
{
	*keys = NULL;
	*n = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errf(err, errlen, -errno, "API keys file %s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return errf(err, errlen, -EINVAL, "API keys file %s is not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return errf(err, errlen, -EPERM,
		            "API keys file %s is readable by others (mode %03o): chmod 600 it",
		            path, (unsigned)(st.st_mode & 0777));
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	struct coved_key *list = calloc(COVED_KEYS_MAX, sizeof(*list));
	char line[512];
	int r = list ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
	unsigned int lineno = 0;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		lineno++;
		size_t l = strcspn(line, "\r\n");
		if (line[l] == 0 && !feof(f)) {
			r = errf(err, errlen, -EINVAL,
			         "API keys file %s line %u: longer than %zu bytes", path, lineno,
			         sizeof(line) - 2);
			break;
		}
		line[l] = 0;
		if (l == 0 || line[0] == '#')
			continue;
		if (*n == COVED_KEYS_MAX) {
			r = errf(err, errlen, -EINVAL, "API keys file %s: more than %d keys", path,
			         COVED_KEYS_MAX);
			break;
		}
		const char *why = NULL;
		int k = key_line(line, &list[*n], &why);
		if (k < 0) {
			r = errf(err, errlen, k, "API keys file %s line %u: %s", path, lineno, why);
			break;
		}
		for (size_t i = 0; i < *n && r == 0; i++)
			if (coved_secret_eq(list[*n].key, list[i].key))
				r = errf(err, errlen, -EINVAL,
				         "API keys file %s line %u: a key given before", path,
				         lineno);
		(*n)++;
	}
	explicit_bzero(line, sizeof(line));
	fclose(f);
	if (r == 0 && *n == 0)
		r = errf(err, errlen, -EINVAL, "API keys file %s holds no key", path);
	if (r < 0) {
		coved_keys_free(list, *n);
		*n = 0;
		return r;
	}
	*keys = list;
	return 0;
}

bool coved_tenant_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > COVED_TENANT_LEN || (len <= 2 && strncmp(s, "..", len) == 0))
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

bool coved_secret_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	volatile unsigned char diff = la != lb;
	for (size_t i = 0; i < lb; i++)
		diff |= (unsigned char)(b[i] ^ (i < la ? a[i] : 0));
	return diff == 0;
}
