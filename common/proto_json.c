/* JSON control payloads: parse with strict rules, send without a heap
 * allocation for the small replies that dominate the exec path. */
#include "proto_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "proto.h"

#define SMALL_JSON 512

int proto_json_parse(const uint8_t *payload, uint32_t len, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	if (len == 0) {
		*out = json_object();
		return *out ? 0 : -ENOMEM;
	}
	json_error_t je;
	json_t *v = json_loadb((const char *)payload, len, JSON_REJECT_DUPLICATES, &je);
	if (!v)
		return errf(err, errlen, -EPROTO, "invalid JSON at %d:%d: %s", je.line, je.column,
		            je.text);
	if (!json_is_object(v)) {
		json_decref(v);
		return errf(err, errlen, -EPROTO, "the payload is not a JSON object");
	}
	*out = v;
	return 0;
}

int proto_send_json(int fd, uint16_t type, uint32_t id, const json_t *obj)
{
	char small[SMALL_JSON];
	size_t n = json_dumpb(obj, small, sizeof(small), JSON_COMPACT);
	if (n == 0)
		return -ENOMEM;
	if (n <= sizeof(small))
		return proto_send(fd, type, id, small, (uint32_t)n);
	if (n > PROTO_MAX_PAYLOAD)
		return -EMSGSIZE;
	char *big = malloc(n);
	if (!big)
		return -ENOMEM;
	int r = -ENOMEM;
	if (json_dumpb(obj, big, n, JSON_COMPACT) == n)
		r = proto_send(fd, type, id, big, (uint32_t)n);
	free(big);
	return r;
}

int proto_send_error(int fd, uint32_t id, int err, const char *msg)
{
	json_t *o =
	    json_pack("{s:i, s:s}", "errno", err < 0 ? -err : err, "message", msg ? msg : "");
	if (!o)
		return -ENOMEM;
	int r = proto_send_json(fd, PROTO_ERROR, id, o);
	json_decref(o);
	return r;
}

int proto_json_int(const json_t *obj, const char *key, int64_t min, int64_t max, int64_t def,
                   int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	*out = def;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return -EINVAL;
	json_int_t i = json_integer_value(v);
	if (i < min || i > max)
		return -EINVAL;
	*out = i;
	return 0;
}

int proto_json_bool(const json_t *obj, const char *key, bool def, bool *out)
{
	json_t *v = json_object_get(obj, key);
	*out = def;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return -EINVAL;
	*out = json_is_true(v);
	return 0;
}

int proto_json_str(const json_t *obj, const char *key, const char **out)
{
	json_t *v = json_object_get(obj, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	*out = json_string_value(v);
	return 0;
}
