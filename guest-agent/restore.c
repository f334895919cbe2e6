/* RESTORED: making a fork of a snapshot unique (see restore.h). */
#include "restore.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errf.h"

#define NSEC_PER_SEC 1000000000ULL

int agent_write_sandbox_id(const char *dir, const char *id)
{
	char tmp[256], path[256];
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, AGENT_SANDBOX_ID_FILE) >=
	        (int)sizeof(tmp) ||
	    snprintf(path, sizeof(path), "%s/%s", dir, AGENT_SANDBOX_ID_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write_all(fd, id, strlen(id));
	if (r == 0)
		r = write_all(fd, "\n", 1);
	if (r == 0 && fchmod(fd, 0644) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int agent_write_hostname_file(const char *path, const char *name)
{
	/* Only an existing file is rewritten: an image without one does not
	 * want one.  Opened without O_TRUNC, so a file that cannot be written
	 * is never emptied. */
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == EROFS || errno == EACCES || errno == EPERM
		           ? 0
		           : -errno;
	int r = ftruncate(fd, 0) < 0 ? -errno : 0;
	if (r == 0)
		r = write_all(fd, name, strlen(name));
	if (r == 0)
		r = write_all(fd, "\n", 1);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r < 0 ? r : 1;
}

/* Adds the host's seed to the input pool, then has the CRNG reseed from it,
 * so the very next read of /dev/urandom differs from every sibling fork's.
 * Returns whether the reseed happened.  /dev/hwrng is not read: its bytes
 * could get no credit (the driver may hand out a buffer it filled before
 * the snapshot, the same in every fork), and the read asked the host for
 * more: a virtio-rng request, three VM exits, in every restore.  The
 * kernel's own hwrng thread still feeds the pool from the device. */
static bool mix_entropy(const uint8_t seed[AGENT_SEED_BYTES])
{
	size_t cap = AGENT_SEED_BYTES;
	struct rand_pool_info *info = calloc(1, sizeof(*info) + cap);
	if (!info)
		return false;
	uint8_t *bytes = (uint8_t *)info->buf;
	memcpy(bytes, seed, AGENT_SEED_BYTES);
	size_t len = AGENT_SEED_BYTES;
	/* The seed is fresh from the host's getrandom(): full credit. */
	info->entropy_count = 8 * AGENT_SEED_BYTES;
	info->buf_size = (int)len;

	const char *failed = NULL;
	int e = 0;
	int fd = open("/dev/urandom", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		failed = "opening /dev/urandom";
		e = errno;
	} else if (ioctl(fd, RNDADDENTROPY, info) < 0) {
		failed = "RNDADDENTROPY";
		e = errno;
		/* No CAP_SYS_ADMIN: a plain write still mixes the bytes in,
		 * only without credit or an immediate reseed. */
		(void)!write_all(fd, (const char *)bytes, len);
	} else if (ioctl(fd, RNDRESEEDCRNG) < 0) {
		failed = "RNDRESEEDCRNG";
		e = errno;
	}
	if (fd >= 0)
		close(fd);
	if (failed)
		fprintf(stderr, "cove-agent: restore: the kernel CRNG was not reseeded: %s: %s\n",
		        failed, strerror(e));
	explicit_bzero(info, sizeof(*info) + cap);
	free(info);
	return !failed;
}

int agent_restore_apply(void *opaque, const struct agent_restore_req *req,
                        struct agent_restore_result *res, char *err, size_t errlen)
{
	(void)opaque;
	int first = 0;
	char msg[256] = "";
	*res = (struct agent_restore_result){ 0 };

	struct timespec ts = { .tv_sec = (time_t)(req->time_ns / NSEC_PER_SEC),
		               .tv_nsec = (long)(req->time_ns % NSEC_PER_SEC) };
	if (clock_settime(CLOCK_REALTIME, &ts) < 0)
		first = errf(msg, sizeof(msg), -errno, "setting the clock: %s", strerror(errno));

	if (sethostname(req->hostname, strlen(req->hostname)) < 0) {
		int e = -errno;
		if (!first)
			first =
			    errf(msg, sizeof(msg), e, "setting the host name: %s", strerror(-e));
	}
	int r = agent_write_hostname_file(AGENT_HOSTNAME_FILE, req->hostname);
	if (r < 0) /* the running name is what counts: only log the file */
		fprintf(stderr, "cove-agent: restore: writing %s: %s\n", AGENT_HOSTNAME_FILE,
		        strerror(-r));

	r = agent_write_sandbox_id(AGENT_RUN_DIR, req->sandbox_id);
	if (r < 0 && !first)
		first = errf(msg, sizeof(msg), r, "writing %s/%s: %s", AGENT_RUN_DIR,
		             AGENT_SANDBOX_ID_FILE, strerror(-r));

	res->reseeded = mix_entropy(req->seed);
	if (first)
		return errf(err, errlen, first, "restore: %s (the CRNG was %sreseeded)", msg,
		            res->reseeded ? "" : "not ");
	/* Nothing on the console when all went well: every byte through
	 * the UART is a VM exit, and a restore should cost a handful. */
	return 0;
}
