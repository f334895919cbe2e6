/* The restore notice: after a restore from a snapshot, the host gives the
 * guest its own clock, host name, sandbox id and entropy (PROTO_RESTORED,
 * docs/protocol.md), so forks of one snapshot stop being copies. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "libcove.h"
#include "proto.h"

#define SEED_BYTES   32 /* the protocol's "seed": 64 hex digits */
#define NAME_MAX_LEN 64

/* The agent's rules (docs/protocol.md), checked here too so a bad name is
 * reported as the caller's mistake before anything reaches the guest. */
static bool name_valid(const char *s, bool underscore)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
		      (underscore && ch == '_')))
			return false;
	}
	return true;
}

static int fill_seed(uint8_t *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = getrandom(buf + done, len - done, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* OK {"reseeded": B, "hwrng_bytes": N}: only a reseeded guest is unique. */
static int check_reply(const uint8_t *payload, char *err, size_t errlen)
{
	json_t *o = payload ? json_loads((const char *)payload, 0, NULL) : NULL;
	json_t *v = json_object_get(o, "reseeded");
	int r = 0;
	if (!json_is_boolean(v))
		r = errf(err, errlen, -EPROTO,
		         "the agent's reply to the restore notice "
		         "lacks \"reseeded\"");
	else if (!json_is_true(v))
		r = errf(err, errlen, -EIO,
		         "the guest could not reseed its random generator after the "
		         "restore (see its console)");
	json_decref(o);
	return r;
}

int cove_agent_restored(struct cove_sandbox *sb, const char *hostname, const char *sandbox_id,
                        char *err, size_t errlen)
{
	return cove_agent_restored_on(sb, -1, hostname, sandbox_id, err, errlen);
}

int cove_agent_restored_on(struct cove_sandbox *sb, int fd, const char *hostname,
                           const char *sandbox_id, char *err, size_t errlen)
{
	if (!name_valid(hostname, false))
		return errf(err, errlen, -EINVAL,
		            "invalid host name '%s': 1-64 of A-Z, a-z, 0-9, '-', '.'",
		            hostname ? hostname : "");
	if (!name_valid(sandbox_id, true))
		return errf(err, errlen, -EINVAL,
		            "invalid sandbox id '%s': 1-64 of A-Z, a-z, 0-9, '-', '.', '_'",
		            sandbox_id ? sandbox_id : "");

	uint8_t seed[SEED_BYTES];
	char hex[2 * SEED_BYTES + 1];
	int r = fill_seed(seed, sizeof(seed));
	if (r < 0)
		return errf(err, errlen, r, "getrandom: %s", strerror(-r));
	for (size_t i = 0; i < sizeof(seed); i++)
		snprintf(hex + 2 * i, 3, "%02x", seed[i]);
	explicit_bzero(seed, sizeof(seed));

	/* Read last, just before sending, so the guest's clock is as close
	 * to the host's as one round trip allows. */
	bool own = fd < 0;
	if (own)
		fd = cove_agent_connect(sb, err, errlen);
	if (fd < 0) {
		explicit_bzero(hex, sizeof(hex));
		return fd;
	}
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	json_int_t ns = (json_int_t)now.tv_sec * 1000000000 + now.tv_nsec;
	json_t *o = json_pack("{s:I, s:s, s:s, s:s}", "time_ns", ns, "hostname", hostname,
	                      "sandbox_id", sandbox_id, "seed", hex);
	explicit_bzero(hex, sizeof(hex));
	r = cove_send_json(fd, PROTO_RESTORED, o, err, errlen);
	uint8_t *payload = NULL;
	if (r == 0)
		r = cove_expect(fd, PROTO_OK, &payload, NULL, err, errlen);
	if (r == 0)
		r = check_reply(payload, err, errlen);
	free(payload);
	if (own)
		close(fd);
	return r;
}
