/* libFuzzer target: a journal file as the verifier reads it (hostile: the
 * file may have been edited by anyone with access to the state dir), and
 * the logs route's ?since= value with the line filter it selects.  The
 * verdict must be consistent: whole means every line was read and the
 * last seq equals the line count; broken names a line within the file. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api/logs_query.h"
#include "lib/base/jchain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *b = (const char *)data;
	struct jchain c;
	jchain_start(&c);
	if (size && data[0] & 1) {
		c.anchor_seq = 1 + (data[0] >> 1);
		memset(c.anchor_hash, 'a', SHA256_HEX - 1);
		c.anchor_hash[SHA256_HEX - 1] = 0;
	}
	size_t newlines = 0;
	for (size_t i = 0; i < size; i++)
		newlines += data[i] == '\n';
	if (jchain_verify(&c, b, size) == 0) {
		if (c.bad || c.lines != newlines || c.seq != c.lines)
			abort();
	} else if (c.bad == 0 || c.bad > newlines + 2 || !c.why[0]) {
		abort();
	}
	/* The first line (bounded) as a ?since= value, the rest as a line. */
	const char *nl = memchr(b, '\n', size);
	size_t n = nl ? (size_t)(nl - b) : size;
	if (n > 100)
		return 0;
	char v[101];
	memcpy(v, b, n);
	v[n] = 0;
	struct coved_since s;
	char err[200];
	if (coved_since_parse(v, &s, err, sizeof(err)) == 0 && nl)
		(void)coved_since_keeps(&s, nl + 1, size - n - 1);
	return 0;
}
