/* cove_client: drives one sandbox through libcove for the tests and
 * benchmarks that `cove run` cannot express.
 *
 *   cove_client concurrent N     N execs at once on one sandbox, each checked
 *   cove_client malformed        a malformed frame closes that connection,
 *                                the agent keeps serving
 *   cove_client rtt N            median and p90 round trip of N `true` execs
 *   cove_client restore DIR CMD  restores DIR, runs `sh -c CMD` as the first
 *                                exec (printing its output), then prints
 *                                cove-vmm's {"op":"stats"} line
 *   cove_client defaults NAME USER CWD [K=V]...
 *                                sets the exec defaults of the named sandbox
 *                                (cove_set_exec_defaults; "-" for none)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cove.h"
#include "lib/agent/agent_client.h"
#include "proto.h"

struct buf {
	char data[256];
	size_t len;
};

static void collect(void *opaque, const void *data, size_t len)
{
	struct buf *b = opaque;
	size_t n = len < sizeof(b->data) - 1 - b->len ? len : sizeof(b->data) - 1 - b->len;
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = 0;
}

struct job {
	struct cove_sandbox *sb;
	int index;
	int ok;
};

static void *run_job(void *arg)
{
	struct job *j = arg;
	char cmd[128], want[64], err[256];
	snprintf(cmd, sizeof(cmd), "echo job-%d; exit %d", j->index, j->index % 7);
	snprintf(want, sizeof(want), "job-%d\n", j->index);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct buf out = { .len = 0 };
	struct cove_exec_opts o = {
		.argv = argv, .stdin_fd = -1, .on_stdout = collect, .opaque = &out
	};
	struct cove_exec_result res;
	int r = cove_exec(j->sb, &o, &res, err, sizeof(err));
	j->ok = r == 0 && res.exit_code == j->index % 7 && !strcmp(out.data, want);
	if (!j->ok)
		fprintf(stderr, "job %d: r=%d (%s) code=%d out='%s'\n", j->index, r, r ? err : "",
		        res.exit_code, out.data);
	return NULL;
}

static int concurrent(struct cove_sandbox *sb, int n)
{
	struct job *jobs = calloc((size_t)n, sizeof(*jobs));
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	for (int i = 0; i < n; i++) {
		jobs[i] = (struct job){ .sb = sb, .index = i };
		pthread_create(&t[i], NULL, run_job, &jobs[i]);
	}
	int good = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		good += jobs[i].ok;
	}
	printf("concurrent: %d of %d execs correct\n", good, n);
	free(jobs);
	free(t);
	return good == n ? 0 : 1;
}

static int malformed(struct cove_sandbox *sb)
{
	char err[256];
	int fd = cove_agent_connect(sb, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "connect: %s\n", err);
		return 1;
	}
	/* A frame of an unknown type, then one that claims 2 GiB. */
	static const uint8_t junk[] = {
		4, 0, 0, 0, 0xee, 0x7e, 0, 0, 1, 0, 0, 0, 'j', 'u', 'n', 'k'
	};
	int r = write(fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk) ? 0 : -1;
	struct proto_hdr h = { 0 };
	uint8_t *p = NULL;
	int got = proto_recv(fd, &h, &p);
	free(p);
	bool error_reply = got == 0 && h.type == PROTO_ERROR;
	got = proto_recv(fd, &h, &p); /* then the agent closes this connection */
	free(p);
	bool closed = got == -ECONNRESET || got == -ECONNABORTED;
	close(fd);
	int alive = cove_ping(sb, err, sizeof(err));
	printf("malformed: error reply %s, connection closed %s, agent answers afterwards %s\n",
	       error_reply ? "yes" : "no", closed ? "yes" : "no", alive == 0 ? "yes" : "no");
	return r == 0 && error_reply && closed && alive == 0 ? 0 : 1;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int rtt(struct cove_sandbox *sb, int n)
{
	double *t = calloc((size_t)n, sizeof(*t));
	const char *argv[] = { "true", NULL };
	char err[256];
	for (int i = 0; i < n; i++) {
		struct cove_exec_opts o = { .argv = argv, .stdin_fd = -1 };
		struct cove_exec_result res;
		double t0 = now_us();
		if (cove_exec(sb, &o, &res, err, sizeof(err)) < 0 || res.exit_code) {
			fprintf(stderr, "rtt: exec %d failed: %s\n", i, err);
			free(t);
			return 1;
		}
		t[i] = now_us() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("rtt: %d execs of true: median %.0f us, p90 %.0f us, min %.0f us\n", n, t[n / 2],
	       t[n * 9 / 10], t[0]);
	free(t);
	return 0;
}

/* A restore and its first exec in one process (the notice then shares the
 * exec's connection, and the first restore records the working set). */
static int restore_exec(struct cove_config *cfg, const char *dir, const char *cmd)
{
	char err[512];
	struct cove_sandbox *sb;
	if (cove_restore(cfg, dir, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove_client: restore: %s\n", err);
		return 1;
	}
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct buf out = { .len = 0 };
	struct cove_exec_opts o = {
		.argv = argv, .stdin_fd = -1, .on_stdout = collect, .opaque = &out
	};
	struct cove_exec_result res;
	int r = cove_exec(sb, &o, &res, err, sizeof(err));
	char *stats = NULL;
	if (r == 0 && res.exit_code == 0 && cove_vmm_stats(sb, &stats, err, sizeof(err)) == 0)
		printf("%sstats %s\n", out.data, stats);
	else
		fprintf(stderr, "cove_client: exec: r=%d (%s) code=%d\n", r, r ? err : "",
		        res.exit_code);
	int rc = stats ? 0 : 1;
	free(stats);
	cove_free(sb);
	return rc;
}

static int set_defaults(int argc, char **argv)
{
	char err[512];
	struct cove_sandbox *sb;
	if (argc < 5) {
		fprintf(stderr, "usage: cove_client defaults NAME USER CWD [K=V]...\n");
		return 2;
	}
	if (cove_open(argv[2], &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove_client: %s\n", err);
		return 1;
	}
	struct cove_exec_defaults d = {
		.env = argc > 5 ? (const char *const *)argv + 5 : NULL,
		.user = strcmp(argv[3], "-") ? argv[3] : NULL,
		.cwd = strcmp(argv[4], "-") ? argv[4] : NULL,
	};
	int r = cove_set_exec_defaults(sb, &d, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "cove_client: defaults: %s\n", err);
	cove_free(sb);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: cove_client concurrent N | malformed | rtt N | restore DIR "
		                "CMD | defaults NAME USER CWD [K=V]...\n");
		return 2;
	}
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	if (!strcmp(argv[1], "restore"))
		return argc == 4 ? restore_exec(&cfg, argv[2], argv[3]) : 2;
	if (!strcmp(argv[1], "defaults"))
		return set_defaults(argc, argv);
	char err[512];
	struct cove_sandbox *sb;
	if (cove_start(&cfg, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove_client: %s\n", err);
		return 1;
	}
	int n = argc > 2 ? atoi(argv[2]) : 64;
	int r = 2;
	if (!strcmp(argv[1], "concurrent"))
		r = concurrent(sb, n > 0 ? n : 64);
	else if (!strcmp(argv[1], "malformed"))
		r = malformed(sb);
	else if (!strcmp(argv[1], "rtt"))
		r = rtt(sb, n > 0 ? n : 100);
	cove_free(sb);
	return r;
}
