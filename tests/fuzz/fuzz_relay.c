/* libFuzzer target: what a sandbox's server answers a relayed request
 * with (daemon/http/relay.c), and the host names a client sends.  The
 * first byte picks: bit 0 a HEAD request, bit 1 the Host parser instead,
 * bits 2-7 the size of the reads the answer is cut into.  What holds:
 * the parser takes no more than it is given, writes no more body than it
 * read, and a complete head has a status and headers inside its store. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/http/relay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_head(const struct relay_resp *r)
{
	if (!r->head_done)
		return;
	if (r->status < 100 || r->status > 999 || r->nhdrs > RELAY_HEADERS_MAX)
		abort();
	for (unsigned i = 0; i < r->nhdrs; i++) {
		const char *n, *v;
		relay_resp_header(r, i, &n, &v);
		if (n < r->head || n >= r->head + r->head_len || !n[0])
			abort();
		if (strnlen(v, RELAY_HEAD_MAX) >= RELAY_HEAD_MAX)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	data++;
	size--;
	if (mode & 2) {
		char *host = strndup((const char *)data, size);
		uint16_t port;
		char id[RELAY_ID_MAX + 1];
		int r = relay_host_route(host, "cove.test", &port, id);
		if (r == 1 && (port == 0 || !id[0] || strlen(id) > RELAY_ID_MAX ||
		               strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") != strlen(id)))
			abort();
		(void)relay_port_value(host);
		free(host);
		return 0;
	}
	static struct relay_resp r;
	static uint8_t out[1 << 16];
	relay_resp_init(&r, mode & 1);
	size_t cut = 1u + (mode >> 2) * 97u, off = 0, outlen = 0;
	while (off < size) {
		size_t n = size - off < cut ? size - off : cut;
		if (outlen + n > sizeof(out))
			outlen = 0; /* what the reader handed on */
		size_t before = outlen;
		long k = relay_resp_feed(&r, data + off, n, out, &outlen);
		if (k < 0)
			return 0;
		if ((size_t)k > n || outlen - before > (size_t)k)
			abort();
		check_head(&r);
		if ((size_t)k < n || (size_t)k == 0)
			break; /* the answer (or its head before an upgrade) is over */
		off += n;
	}
	if (!r.done && !r.upgraded && relay_resp_eof(&r) == 0 && !r.done)
		abort();
	return 0;
}
