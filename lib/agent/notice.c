/* The restore notice: after a restore from a snapshot, the host gives the
 * guest its own clock, host name, sandbox id and entropy (PROTO_RESTORED,
 * docs/protocol.md), so forks of one snapshot stop being copies. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "errf.h"
#include "lib/agent/conn.h"
#include "lib/agent/notice.h"
#include "lib/base/handle.h"
#include "proto.h"

#define SEED_BYTES    32 /* the protocol's "seed": 64 hex digits */
#define NAME_MAX_LEN  64
#define NOTICE_WAIT_S 30 /* another thread's wait for the notice's answer */

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

/* Checks the names and sends the notice on fd.  The clock is read last,
 * just before sending, so the guest's is as close to the host's as one
 * trip allows. */
static int notice_send(int fd, const char *hostname, const char *sandbox_id, char *err,
                       size_t errlen)
{
	uint8_t seed[SEED_BYTES];
	char hex[2 * SEED_BYTES + 1];
	int r = fill_seed(seed, sizeof(seed));
	if (r < 0)
		return errf(err, errlen, r, "getrandom: %s", strerror(-r));
	for (size_t i = 0; i < sizeof(seed); i++)
		snprintf(hex + 2 * i, 3, "%02x", seed[i]);
	explicit_bzero(seed, sizeof(seed));
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	json_int_t ns = (json_int_t)now.tv_sec * 1000000000 + now.tv_nsec;
	json_t *o = json_pack("{s:I, s:s, s:s, s:s}", "time_ns", ns, "hostname", hostname,
	                      "sandbox_id", sandbox_id, "seed", hex);
	explicit_bzero(hex, sizeof(hex));
	return cove_send_json(fd, PROTO_RESTORED, o, err, errlen);
}

static int check_names(const char *hostname, const char *sandbox_id, char *err, size_t errlen)
{
	if (!name_valid(hostname, false))
		return errf(err, errlen, -EINVAL,
		            "invalid host name '%s': 1-64 of A-Z, a-z, 0-9, '-', '.'",
		            hostname ? hostname : "");
	if (!name_valid(sandbox_id, true))
		return errf(err, errlen, -EINVAL,
		            "invalid sandbox id '%s': 1-64 of A-Z, a-z, 0-9, '-', '.', '_'",
		            sandbox_id ? sandbox_id : "");
	return 0;
}

int cove_agent_restored(struct cove_sandbox *sb, const char *hostname, const char *sandbox_id,
                        char *err, size_t errlen)
{
	return cove_agent_restored_on(sb, -1, hostname, sandbox_id, err, errlen);
}

/* The notice on fd (or on a connection of its own when fd < 0) and its
 * answer, by deadline (mono_ms()). */
static int restored_until(struct cove_sandbox *sb, int fd, const char *hostname,
                          const char *sandbox_id, int64_t deadline, char *err, size_t errlen)
{
	int r = check_names(hostname, sandbox_id, err, errlen);
	if (r < 0)
		return r;
	bool own = fd < 0;
	/* A notice still in flight is answered first (as agent_connect_until
	 * does, which sits above this file). */
	if (own && (r = notice_settle(sb, err, errlen)) < 0)
		return r;
	if (own)
		fd = agent_connect_unsettled(sb, deadline, NULL, err, errlen);
	if (fd < 0)
		return fd;
	r = notice_send(fd, hostname, sandbox_id, err, errlen);
	uint8_t *payload = NULL;
	if (r == 0)
		r = cove_expect_until(fd, PROTO_OK, &payload, NULL, deadline, err, errlen);
	if (r == 0)
		r = check_reply(payload, err, errlen);
	free(payload);
	if (own)
		close(fd);
	return r;
}

int cove_agent_restored_on(struct cove_sandbox *sb, int fd, const char *hostname,
                           const char *sandbox_id, char *err, size_t errlen)
{
	return restored_until(sb, fd, hostname, sandbox_id, mono_ms() + AGENT_STEP_MS, err, errlen);
}

int notice_begin(struct cove_sandbox *sb, int fd, const char *hostname, unsigned int answer_ms,
                 char *err, size_t errlen)
{
	int r = check_names(hostname, sb->name, err, errlen);
	if (r == 0)
		r = notice_send(fd, hostname, sb->name, err, errlen);
	if (r < 0) {
		close(fd);
		return r;
	}
	pthread_mutex_lock(&sb->notice_lock);
	snprintf(sb->notice_host, sizeof(sb->notice_host), "%s", hostname);
	sb->notice_fd = fd;
	sb->notice_deadline = mono_ms() + (answer_ms ? answer_ms : AGENT_STEP_MS);
	sb->notice_pending = true;
	sb->notice_taken = false;
	sb->notice_r = 0;
	pthread_mutex_unlock(&sb->notice_lock);
	return 0;
}

/* The taken connection is done with (answered, or given up): records the
 * outcome and wakes whoever waits for it. */
static void notice_release(struct cove_sandbox *sb, int r, const char *msg)
{
	pthread_mutex_lock(&sb->notice_lock);
	if (r < 0) {
		sb->notice_r = r;
		snprintf(sb->notice_msg, sizeof(sb->notice_msg), "%s", msg);
	}
	sb->notice_taken = false;
	pthread_cond_broadcast(&sb->notice_cond);
	pthread_mutex_unlock(&sb->notice_lock);
}

/* The notice again, on fresh connections, until it is answered (the
 * transport reset of the restore can catch a connection made before the
 * guest had handled it; the notice is idempotent). */
static int notice_again(struct cove_sandbox *sb, char *err, size_t errlen)
{
	int r = -ECONNRESET;
	for (int tries = 0; tries < 5 && (r == -ECONNRESET || r == -EPIPE); tries++) {
		/* The notice's own budget, and at least one agent step. */
		int64_t deadline = mono_ms() + AGENT_STEP_MS;
		if (sb->notice_deadline > deadline)
			deadline = sb->notice_deadline;
		int fd = agent_connect_unsettled(sb, deadline, NULL, err, errlen);
		if (fd < 0)
			return fd;
		r = restored_until(sb, fd, sb->notice_host, sb->name, deadline, err, errlen);
		close(fd);
	}
	return r;
}

int notice_settle(struct cove_sandbox *sb, char *err, size_t errlen)
{
	pthread_mutex_lock(&sb->notice_lock);
	/* Another thread's first exec holds the notice's connection: wait for
	 * the answer it reads (bounded: it has the agent's step deadlines). */
	int64_t left = sb->notice_deadline - mono_ms();
	int wait_ms = left > NOTICE_WAIT_S * 1000 ? (int)left : NOTICE_WAIT_S * 1000;
	struct timespec until = clock_after_ms(CLOCK_REALTIME, wait_ms);
	while (sb->notice_taken)
		if (pthread_cond_timedwait(&sb->notice_cond, &sb->notice_lock, &until) ==
		    ETIMEDOUT) {
			pthread_mutex_unlock(&sb->notice_lock);
			return errf(err, errlen, -ETIMEDOUT,
			            "the restore notice had no answer within %d s", wait_ms / 1000);
		}
	if (!sb->notice_pending) {
		int r =
		    sb->notice_r < 0 ? errf(err, errlen, sb->notice_r, "%s", sb->notice_msg) : 0;
		pthread_mutex_unlock(&sb->notice_lock);
		return r;
	}
	/* Ours to read: others wait as for a taken one. */
	sb->notice_pending = false;
	sb->notice_taken = true;
	int fd = sb->notice_fd;
	sb->notice_fd = -1;
	pthread_mutex_unlock(&sb->notice_lock);
	char msg[256] = "";
	uint8_t *payload = NULL;
	int r =
	    cove_expect_until(fd, PROTO_OK, &payload, NULL, sb->notice_deadline, msg, sizeof(msg));
	if (r == 0)
		r = check_reply(payload, msg, sizeof(msg));
	free(payload);
	close(fd);
	if (r == -ECONNRESET || r == -EPIPE)
		r = notice_again(sb, msg, sizeof(msg));
	notice_release(sb, r, msg);
	return r < 0 ? errf(err, errlen, r, "%s", msg) : 0;
}

int notice_take(struct cove_sandbox *sb)
{
	pthread_mutex_lock(&sb->notice_lock);
	int fd = -1;
	if (sb->notice_pending && !sb->notice_taken) {
		sb->notice_pending = false;
		sb->notice_taken = true;
		fd = sb->notice_fd;
		sb->notice_fd = -1;
	}
	pthread_mutex_unlock(&sb->notice_lock);
	return fd;
}

int notice_answer(struct cove_sandbox *sb, const struct proto_hdr *h, const uint8_t *payload,
                  char *err, size_t errlen)
{
	char msg[200] = "";
	int r;
	if (h->type == PROTO_OK)
		r = check_reply(payload, msg, sizeof(msg));
	else if (h->type == PROTO_ERROR)
		r = cove_error_frame(payload, msg, sizeof(msg));
	else
		r = errf(msg, sizeof(msg), -EPROTO,
		         "the agent answered the restore notice with frame type %u", h->type);
	char full[256];
	snprintf(full, sizeof(full), "the restore notice failed: %s", msg);
	notice_release(sb, r, full);
	return r < 0 ? errf(err, errlen, r, "%s", full) : 0;
}

void notice_lost(struct cove_sandbox *sb)
{
	char msg[256] = "";
	int r = notice_again(sb, msg, sizeof(msg));
	notice_release(sb, r, msg);
}
