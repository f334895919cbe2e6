/* Bounded JSON request bodies (json_body.h). */
#include "daemon/http/json_body.h"

#include <errno.h>

#include "errf.h"

bool coved_json_depth_ok(const char *buf, size_t len, unsigned int max)
{
	unsigned int depth = 0;
	bool in_str = false, esc = false;
	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];
		if (in_str) {
			if (esc)
				esc = false;
			else if (ch == '\\')
				esc = true;
			else if (ch == '"')
				in_str = false;
			continue;
		}
		if (ch == '"') {
			in_str = true;
		} else if (ch == '{' || ch == '[') {
			if (++depth > max)
				return false;
		} else if ((ch == '}' || ch == ']') && depth > 0) {
			depth--;
		}
	}
	return true;
}

json_t *coved_body_load(const char *buf, size_t len, unsigned int max_depth, char *err,
                        size_t errlen)
{
	if (len == 0)
		return json_object();
	if (!coved_json_depth_ok(buf, len, max_depth)) {
		errf(err, errlen, -EINVAL, "request body nests deeper than %u levels", max_depth);
		return NULL;
	}
	json_error_t je;
	json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		errf(err, errlen, -EINVAL, "request body is not valid JSON: %s (at byte %d)",
		     je.text, je.position);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		errf(err, errlen, -EINVAL, "request body must be a JSON object");
		return NULL;
	}
	return o;
}
