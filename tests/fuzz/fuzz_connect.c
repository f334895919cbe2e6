/* libFuzzer target: a Connect streaming request as envd receives it
 * (daemon/http/connect.c: the 5-byte envelope), then its JSON message through
 * every envd request parser (daemon/envd/messages.c), as the process.Process
 * and filesystem.Filesystem handlers run them (watches and watcher ids
 * among them), and the request's user.
 * A parse either fails with
 * a message or yields values inside their bounds. */
#include <assert.h>
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/envd/messages.h"
#include "daemon/http/connect.h"
#include "lib/agent/agent_client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_all(const json_t *o)
{
	char err[512];
	struct envd_start st;
	if (envd_parse_start(o, &st, err, sizeof(err)) == 0) {
		assert(st.argv && st.argv[0] && st.argv[0][0]);
		for (char **e = st.env; e && *e; e++)
			assert(strchr(*e, '='));
	}
	envd_start_free(&st);
	int pid;
	const char *tag;
	if (envd_parse_selector(o, &pid, &tag, err, sizeof(err)) == 0)
		assert(pid > 0 || (tag && strlen(tag) <= ENVD_TAG_MAX));
	uint8_t *in;
	size_t n;
	if (envd_parse_input(o, &in, &n, err, sizeof(err)) == 0)
		free(in);
	int sig;
	if (envd_parse_signal(o, &sig, err, sizeof(err)) == 0)
		assert(sig == 9 || sig == 15);
	uint16_t rows, cols;
	if (envd_parse_size(o, &rows, &cols, err, sizeof(err)) == 0)
		assert(rows && cols);
	char path[ENVD_PATH_MAX + 1];
	bool recursive;
	if (envd_parse_watch(o, path, sizeof(path), &recursive, err, sizeof(err)) == 0)
		assert(path[0] == '/');
	const char *wid;
	if (envd_parse_watcher_id(o, &wid, err, sizeof(err)) == 0)
		assert(wid[0] && strlen(wid) <= ENVD_WATCHER_ID_MAX &&
		       strspn(wid, "abcdefghijklmnopqrstuvwxyz0123456789") == strlen(wid));
	static const char *keys[] = { "path", "source", "destination" };
	for (size_t i = 0; i < 3; i++) {
		if (envd_parse_path(o, keys[i], path, sizeof(path), err, sizeof(err)) == 0) {
			assert(path[0] == '/');
			assert(!strstr(path, "/../") && !strstr(path, "/./"));
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *msg;
	size_t len;
	char err[256];
	/* As a stream request (enveloped), and as a unary body (plain). */
	if (connect_unwrap(data, size, &msg, &len, err, sizeof(err)) == 0) {
		assert(len == size - CONNECT_HDR && msg == data + CONNECT_HDR);
	} else {
		assert(err[0]);
		msg = data;
		len = size;
	}
	json_t *o;
	if (envd_json(msg, len, &o, err, sizeof(err)) == 0) {
		assert(json_is_object(o));
		parse_all(o);
		json_decref(o);
	}
	/* Base64 round trip of whatever came. */
	uint8_t *dec;
	size_t n;
	if (envd_b64_decode((const char *)data, size, &dec, &n) == 0) {
		char *enc = envd_b64_encode(dec, n);
		uint8_t *again;
		size_t m;
		assert(enc && envd_b64_decode(enc, strlen(enc), &again, &m) == 0);
		assert(m == n && (!n || !memcmp(again, dec, n)));
		free(again);
		free(enc);
		free(dec);
	}
	/* The user of a request: as a Basic header, and as a query value. */
	char *text = malloc(size + 7);
	if (text) {
		memcpy(text, "Basic ", 6);
		memcpy(text + 6, data, size);
		text[size + 6] = 0;
		char user[COVE_USER_MAX + 1];
		for (int i = 0; i < 2; i++) {
			int r = envd_user(i ? text + 6 : NULL, i ? NULL : text, user, sizeof(user));
			assert(r >= -EINVAL && r <= 1);
			if (r == 1)
				assert(cove_user_valid(user) && !strchr(user, ':'));
			else
				assert(!user[0]);
		}
		free(text);
	}
	return 0;
}
