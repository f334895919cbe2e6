/* The list's filters: states, metadata pairs, the template. */
#include "daemon/sandboxes/list_filter.h"

#include <stdlib.h>
#include <string.h>

static bool state_wanted(const char *filter, const char *name)
{
	if (!filter || !*filter)
		return !strcmp(name, "running") || !strcmp(name, "paused") || !strcmp(name, "dead");
	size_t n = strlen(name);
	for (const char *p = filter; *p;) {
		size_t l = strcspn(p, ",");
		if (l == n && strncmp(p, name, n) == 0)
			return true;
		p += l;
		if (*p == ',')
			p++;
	}
	return false;
}

static int hex(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* Decodes s[0..n) into out (room for n + 1; out may be s): %XX, and '+'
 * as a space when plus (form encoding).  Its length, or -1 for a bad %XX
 * or a NUL decoded (no metadata string holds one). */
static long url_decode(const char *s, size_t n, char *out, bool plus)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '+' && plus) {
			c = ' ';
		} else if (c == '%') {
			int hi = n - i >= 3 ? hex(s[i + 1]) : -1;
			int lo = n - i >= 3 ? hex(s[i + 2]) : -1;
			if (hi < 0 || lo < 0 || (hi | lo) == 0)
				return -1;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		out[o++] = c;
	}
	out[o] = 0;
	return (long)o;
}

static bool metadata_match(const json_t *meta, const char *filter)
{
	if (!filter || !*filter)
		return true;
	size_t len = strlen(filter);
	char *k = malloc(len + 1), *v = malloc(len + 1);
	bool ok = k && v;
	for (const char *p = filter; ok && *p;) {
		size_t l = strcspn(p, "&");
		if (l == 0) { /* "&&", a leading or trailing '&': no pair */
			p++;
			continue;
		}
		const char *eq = memchr(p, '=', l);
		/* E2B's SDK encodes each key and value (encodeURIComponent)
		 * before it form-encodes the pairs: both are undone. */
		long kl = eq ? url_decode(p, (size_t)(eq - p), k, true) : -1;
		long vl = kl >= 0 ? url_decode(eq + 1, l - (size_t)(eq + 1 - p), v, true) : -1;
		ok = vl >= 0 && url_decode(k, (size_t)kl, k, false) >= 0 &&
		     url_decode(v, (size_t)vl, v, false) >= 0;
		const char *have = ok ? json_string_value(json_object_get(meta, k)) : NULL;
		ok = have && strcmp(have, v) == 0;
		p += l;
		if (*p == '&')
			p++;
	}
	free(k);
	free(v);
	return ok;
}

bool coved_list_filter_match(const struct coved_list_filter *f, const char *state,
                             const char *template_id, const json_t *metadata)
{
	if (!state_wanted(f->states, state))
		return false;
	if (f->template_id && *f->template_id &&
	    (!template_id || strcmp(f->template_id, template_id) != 0))
		return false;
	return metadata_match(metadata, f->metadata);
}
