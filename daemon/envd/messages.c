/* envd request bodies (messages.h). */
#include "daemon/envd/messages.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errf.h"
#include "lib/agent/agent_client.h"

#define bad(...) errf(err, errlen, -EPROTO, __VA_ARGS__)

int envd_json(const uint8_t *msg, size_t len, json_t **out, char *err, size_t errlen)
{
	*out = NULL;
	json_error_t je;
	json_t *o = json_loadb((const char *)msg, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return bad("the request is not valid JSON: %.100s", je.text);
	if (!json_is_object(o)) {
		json_decref(o);
		return bad("the request is not a JSON object");
	}
	*out = o;
	return 0;
}

static bool str_ok(const char *s, size_t max)
{
	return s && strnlen(s, max + 1) <= max;
}

void envd_start_free(struct envd_start *s)
{
	free(s->argv);
	if (s->env) {
		for (char **e = s->env; *e; e++)
			free(*e);
		free(s->env);
	}
	memset(s, 0, sizeof(*s));
}

static int parse_envs(const json_t *envs, struct envd_start *s, char *err, size_t errlen)
{
	if (!envs || json_is_null(envs))
		return 0;
	if (!json_is_object(envs) || json_object_size(envs) > ENVD_ENVS_MAX)
		return bad("\"envs\" must be an object of at most %d strings", ENVD_ENVS_MAX);
	s->env = calloc(json_object_size(envs) + 1, sizeof(*s->env));
	if (!s->env)
		return -ENOMEM;
	size_t i = 0;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)envs, k, v)
	{
		if (!k[0] || strchr(k, '=') || !json_is_string(v))
			return bad("\"envs\" needs names without '=' and string values");
		const char *val = json_string_value(v);
		size_t kl = strlen(k), vl = strlen(val);
		if (kl > 4096 || vl > 131072)
			return bad("an environment variable is too long");
		char *kv = malloc(kl + vl + 2);
		if (!kv)
			return -ENOMEM;
		memcpy(kv, k, kl);
		kv[kl] = '=';
		memcpy(kv + kl + 1, val, vl + 1);
		s->env[i++] = kv;
	}
	return 0;
}

int envd_parse_start(const json_t *o, struct envd_start *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	const json_t *p = json_object_get(o, "process");
	if (!json_is_object(p))
		return bad("\"process\" is required");
	const char *cmd = json_string_value(json_object_get(p, "cmd"));
	if (!cmd || !cmd[0] || !str_ok(cmd, ENVD_PATH_MAX))
		return bad("\"process.cmd\" must be a non-empty string");
	const json_t *args = json_object_get(p, "args");
	if (args && !json_is_null(args) &&
	    (!json_is_array(args) || json_array_size(args) > ENVD_ARGS_MAX))
		return bad("\"process.args\" must be an array of at most %d strings",
		           ENVD_ARGS_MAX);
	size_t n = json_is_array(args) ? json_array_size(args) : 0;
	s->argv = calloc(n + 2, sizeof(*s->argv));
	if (!s->argv)
		return -ENOMEM;
	s->argv[0] = cmd;
	for (size_t i = 0; i < n; i++) {
		const char *a = json_string_value(json_array_get(args, i));
		if (!a)
			return bad("\"process.args\" must be strings");
		s->argv[i + 1] = a;
	}
	int r = parse_envs(json_object_get(p, "envs"), s, err, errlen);
	if (r < 0)
		return r;
	const json_t *cwd = json_object_get(p, "cwd");
	if (cwd && !json_is_null(cwd)) {
		s->cwd = json_string_value(cwd);
		if (!s->cwd || !str_ok(s->cwd, ENVD_PATH_MAX))
			return bad("\"process.cwd\" must be a string");
		if (!s->cwd[0])
			s->cwd = NULL;
	}
	const json_t *tag = json_object_get(o, "tag");
	if (tag && !json_is_null(tag)) {
		s->tag = json_string_value(tag);
		if (!s->tag || !str_ok(s->tag, ENVD_TAG_MAX))
			return bad("\"tag\" must be a string of at most %d bytes", ENVD_TAG_MAX);
	}
	const json_t *in = json_object_get(o, "stdin");
	if (in && !json_is_null(in)) {
		if (!json_is_boolean(in))
			return bad("\"stdin\" must be true or false");
		s->stdin_open = json_is_true(in);
	}
	const json_t *pty = json_object_get(o, "pty");
	if (pty && !json_is_null(pty)) {
		s->pty = true;
		r = envd_parse_size(o, &s->rows, &s->cols, err, errlen);
		if (r < 0)
			return r;
	}
	return 0;
}

int envd_parse_selector(const json_t *o, int *pid, const char **tag, char *err, size_t errlen)
{
	*pid = 0;
	*tag = NULL;
	const json_t *p = json_object_get(o, "process");
	if (!json_is_object(p))
		return bad("\"process\" (a selector) is required");
	const json_t *v = json_object_get(p, "pid");
	if (v && !json_is_null(v)) {
		/* uint32 in protobuf JSON: a number or a decimal string. */
		long long n = -1;
		if (json_is_integer(v))
			n = json_integer_value(v);
		else if (json_is_string(v)) {
			const char *s = json_string_value(v);
			char *end;
			errno = 0;
			n = strtoll(s, &end, 10);
			if (errno || end == s || *end)
				n = -1;
		}
		if (n < 1 || n > INT32_MAX)
			return bad("\"process.pid\" must be a process id");
		*pid = (int)n;
		return 0;
	}
	v = json_object_get(p, "tag");
	if (json_is_string(v) && str_ok(json_string_value(v), ENVD_TAG_MAX)) {
		*tag = json_string_value(v);
		return 0;
	}
	return bad("\"process\" must select a pid or a tag");
}

int envd_parse_input(const json_t *o, uint8_t **data, size_t *len, char *err, size_t errlen)
{
	*data = NULL;
	*len = 0;
	const json_t *in = json_object_get(o, "input");
	if (!json_is_object(in))
		return bad("\"input\" is required");
	const json_t *v = json_object_get(in, "stdin");
	if (!v)
		v = json_object_get(in, "pty");
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad("\"input\" bytes must be base64");
	if (envd_b64_decode(json_string_value(v), json_string_length(v), data, len) < 0)
		return bad("\"input\" bytes must be base64");
	return 0;
}

int envd_parse_signal(const json_t *o, int *sig, char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, "signal");
	const char *s = json_string_value(v);
	if ((s && !strcmp(s, "SIGNAL_SIGKILL")) ||
	    (json_is_integer(v) && json_integer_value(v) == 9))
		*sig = 9;
	else if ((s && !strcmp(s, "SIGNAL_SIGTERM")) ||
	         (json_is_integer(v) && json_integer_value(v) == 15))
		*sig = 15;
	else
		return bad("\"signal\" must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
	return 0;
}

static int size_member(const json_t *size, const char *key, uint16_t *out)
{
	const json_t *v = json_object_get(size, key);
	if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
		return -1;
	*out = (uint16_t)json_integer_value(v);
	return 0;
}

int envd_parse_size(const json_t *o, uint16_t *rows, uint16_t *cols, char *err, size_t errlen)
{
	const json_t *pty = json_object_get(o, "pty");
	if (!pty || json_is_null(pty))
		return 1;
	const json_t *size = json_object_get(pty, "size");
	if (!json_is_object(pty) || !json_is_object(size) || size_member(size, "rows", rows) < 0 ||
	    size_member(size, "cols", cols) < 0)
		return bad("\"pty.size\" must be {\"cols\", \"rows\"}, each 1-65535");
	return 0;
}

int envd_resolve_path(const char *in, char *out, size_t outlen)
{
	if (!in || !in[0] || outlen < 2)
		return -EINVAL;
	size_t inlen = strnlen(in, ENVD_PATH_MAX + 1);
	if (inlen > ENVD_PATH_MAX)
		return -ENAMETOOLONG;
	char tmp[ENVD_PATH_MAX + sizeof(ENVD_HOME) + 2];
	if (in[0] == '/')
		snprintf(tmp, sizeof(tmp), "%s", in);
	else if (in[0] == '~' && (in[1] == '/' || !in[1]))
		snprintf(tmp, sizeof(tmp), "%s%s", ENVD_HOME, in + 1);
	else
		snprintf(tmp, sizeof(tmp), "%s/%s", ENVD_HOME, in);
	/* Fold "", "." and ".." components. */
	size_t o = 0;
	const char *p = tmp;
	while (*p) {
		while (*p == '/')
			p++;
		const char *e = p;
		while (*e && *e != '/')
			e++;
		size_t n = (size_t)(e - p);
		if (n == 0 || (n == 1 && p[0] == '.')) {
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else {
			if (o + 1 + n + 1 > outlen || o + 1 + n > ENVD_PATH_MAX)
				return -ENAMETOOLONG;
			out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
		}
		p = e;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = 0;
	return 0;
}

int envd_parse_path(const json_t *o, const char *key, char *out, size_t outlen, char *err,
                    size_t errlen)
{
	const char *s = json_string_value(json_object_get(o, key));
	if (!s || !s[0])
		return bad("\"%s\" must be a non-empty path", key);
	if (envd_resolve_path(s, out, outlen) < 0)
		return bad("\"%s\" is not a usable path", key);
	return 0;
}

/* A bool member under its JSON name or its proto name: absent or null is
 * false. */
static int bool_member(const json_t *o, const char *json_name, const char *proto_name, bool *out)
{
	const json_t *v = json_object_get(o, json_name);
	if (!v)
		v = json_object_get(o, proto_name);
	*out = json_is_true(v);
	return !v || json_is_null(v) || json_is_boolean(v) ? 0 : -1;
}

int envd_parse_watch(const json_t *o, char *path, size_t pathlen, bool *recursive, char *err,
                     size_t errlen)
{
	bool ignored;
	if (bool_member(o, "recursive", "recursive", recursive) < 0 ||
	    bool_member(o, "includeEntry", "include_entry", &ignored) < 0 ||
	    bool_member(o, "allowNetworkMounts", "allow_network_mounts", &ignored) < 0)
		return bad("\"recursive\", \"includeEntry\" and \"allowNetworkMounts\" must be "
		           "true or false");
	return envd_parse_path(o, "path", path, pathlen, err, errlen);
}

int envd_parse_watcher_id(const json_t *o, const char **id, char *err, size_t errlen)
{
	const json_t *v = json_object_get(o, "watcherId");
	if (!v)
		v = json_object_get(o, "watcher_id");
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	if (!n || n > ENVD_WATCHER_ID_MAX || n != json_string_length(v))
		return bad("\"watcherId\" must be a watcher's id");
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			return bad("\"watcherId\" must be a watcher's id");
	*id = s;
	return 0;
}

static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

int envd_b64_decode(const char *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	while (inlen && in[inlen - 1] == '=')
		inlen--;
	if (inlen % 4 == 1)
		return -EINVAL;
	size_t cap = inlen / 4 * 3 + 3;
	uint8_t *buf = malloc(cap ? cap : 1);
	if (!buf)
		return -ENOMEM;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < inlen; i++) {
		int v = b64_val((unsigned char)in[i]);
		if (v < 0) {
			free(buf);
			return -EINVAL;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (uint8_t)(acc >> bits);
		}
	}
	*out = buf;
	*outlen = o;
	return 0;
}

char *envd_b64_encode(const uint8_t *in, size_t len)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	char *out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	size_t o = 0, i = 0;
	for (; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (i < len) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = 0;
	return out;
}

int envd_user(const char *username, const char *authorization, char *out, size_t outlen)
{
	char buf[COVE_USER_MAX + 1];
	out[0] = 0;
	if (username && username[0]) {
		if (strnlen(username, sizeof(buf)) >= sizeof(buf))
			return -EINVAL;
		snprintf(buf, sizeof(buf), "%s", username);
	} else if (authorization && !strncasecmp(authorization, "Basic ", 6)) {
		const char *b64 = authorization + 6;
		size_t n = strnlen(b64, 4 * sizeof(buf));
		uint8_t *raw = NULL;
		size_t rawlen = 0;
		if (n >= 4 * sizeof(buf) || envd_b64_decode(b64, n, &raw, &rawlen) < 0)
			return -EINVAL;
		/* "user:password"; the SDK's password is empty. */
		uint8_t *colon = raw ? memchr(raw, ':', rawlen) : NULL;
		size_t ulen = colon ? (size_t)(colon - raw) : rawlen;
		bool fits = ulen < sizeof(buf) && (!raw || !memchr(raw, 0, ulen));
		if (fits && ulen)
			memcpy(buf, raw, ulen);
		free(raw);
		if (!fits)
			return -EINVAL;
		buf[ulen] = 0;
	} else {
		return 0;
	}
	if (!buf[0])
		return 0;
	if (!cove_user_valid(buf) || strchr(buf, ':') || strlen(buf) >= outlen)
		return -EINVAL;
	memcpy(out, buf, strlen(buf) + 1);
	return 1;
}
