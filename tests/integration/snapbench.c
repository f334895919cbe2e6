/* snapbench: the figures of the snapshots work, measured through libcove.
 *
 *   snapbench latency N   N cold boots and N restores, interleaved (A B A B):
 *                         start (or restore) to the first exec result of
 *                         `true`; medians and their ratio
 *   snapbench fanout N    one cold sandbox's PSS against the summed PSS and
 *                         RSS of N forks of its snapshot, all running
 *
 * Both print the snapshot's size on disk against guest memory. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cove.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int exec_true(struct cove_sandbox *sb)
{
	const char *argv[] = { "true", NULL };
	struct cove_exec_opts o = { .argv = argv, .stdin_fd = -1 };
	struct cove_exec_result res;
	char err[256];
	if (cove_exec(sb, &o, &res, err, sizeof(err)) < 0 || res.exit_code != 0) {
		fprintf(stderr, "snapbench: exec failed: %s\n", err);
		return -1;
	}
	return 0;
}

/* kB of "Pss:" or "Rss:" in /proc/PID/smaps_rollup. */
static long rollup(pid_t pid, const char *key)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long v = -1;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = atol(line + kl + 1);
	fclose(f);
	return v;
}

/* The VMM's phase times ({"op":"stats"} on its control socket). */
static void vmm_times(struct cove_sandbox *sb, double t0_ms)
{
	char buf[4096];
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.90s/api.sock", cove_sandbox_dir(sb));
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    write(fd, "{\"op\":\"stats\"}\n", 16) != 16) {
		if (fd >= 0)
			close(fd);
		return;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	json_t *j = json_loads(buf, 0, NULL);
	json_t *t = json_object_get(j, "times");
	double start =
	    json_integer_value(json_object_get(t, "process_start_mono_us")) / 1e3 - t0_ms;
	printf("  vmm exec +%.1f ms, vm created +%.1f ms, first KVM_RUN +%.1f ms, exits %lld\n",
	       start, start + json_integer_value(json_object_get(t, "vm_created_us")) / 1e3,
	       start + json_integer_value(json_object_get(t, "first_kvm_run_us")) / 1e3,
	       (long long)json_integer_value(json_object_get(json_object_get(j, "kvm"), "exits")));
	json_decref(j);
}

static void print_snapshot_size(const char *dir)
{
	char path[4096];
	struct stat st;
	snprintf(path, sizeof(path), "%s/memory", dir);
	if (stat(path, &st) == 0)
		printf("snapshot memory file: %.1f MiB on disk for %.0f MiB of guest memory "
		       "(%.1f%%)\n",
		       st.st_blocks * 512.0 / (1 << 20), st.st_size / (double)(1 << 20),
		       100.0 * st.st_blocks * 512.0 / (double)st.st_size);
	snprintf(path, sizeof(path), "%s/state", dir);
	if (stat(path, &st) == 0)
		printf("snapshot state file: %lld bytes\n", (long long)st.st_size);
	snprintf(path, sizeof(path), "%s/disk0.qcow2", dir);
	if (stat(path, &st) == 0)
		printf("snapshot disk overlay: %.1f MiB on disk\n",
		       st.st_blocks * 512.0 / (1 << 20));
}

/* A cold sandbox, snapshotted into dir and stopped. */
static int make_snapshot(struct cove_config *cfg, const char *dir, long *pss_kb)
{
	char err[512];
	struct cove_sandbox *sb;
	if (cove_start(cfg, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "snapbench: %s\n", err);
		return -1;
	}
	int r = exec_true(sb);
	if (pss_kb)
		*pss_kb = rollup(cove_vmm_pid(sb), "Pss");
	if (r == 0 && cove_snapshot(sb, dir, true, err, sizeof(err)) < 0) {
		fprintf(stderr, "snapbench: snapshot: %s\n", err);
		r = -1;
	}
	cove_free(sb);
	return r;
}

static int latency(struct cove_config *cfg, const char *dir, int n)
{
	if (make_snapshot(cfg, dir, NULL) < 0)
		return 1;
	print_snapshot_size(dir);
	double *cold = calloc((size_t)n, sizeof(double)), *warm = calloc((size_t)n, sizeof(double));
	char err[512];
	for (int i = 0; i < n; i++) {
		struct cove_sandbox *sb;
		double t0 = now_ms();
		if (cove_start(cfg, &sb, err, sizeof(err)) < 0 || exec_true(sb) < 0) {
			fprintf(stderr, "snapbench: cold %d: %s\n", i, err);
			return 1;
		}
		cold[i] = now_ms() - t0;
		cove_free(sb);
		t0 = now_ms();
		if (cove_restore(cfg, dir, &sb, err, sizeof(err)) < 0) {
			fprintf(stderr, "snapbench: restore %d: %s\n", i, err);
			return 1;
		}
		double t_ready = now_ms() - t0;
		if (exec_true(sb) < 0)
			return 1;
		warm[i] = now_ms() - t0;
		printf("  restore: agent took the notice +%.1f ms, first exec +%.1f ms\n", t_ready,
		       warm[i]);
		vmm_times(sb, t0);
		cove_free(sb);
		printf("run %d: cold boot to first exec %.1f ms, restore to first exec %.1f ms\n",
		       i, cold[i], warm[i]);
	}
	double mc = median(cold, n), mw = median(warm, n);
	printf("median cold boot to first exec: %.1f ms\n", mc);
	printf("median restore to first exec:   %.1f ms\n", mw);
	printf("restore is %.1fx faster\n", mc / mw);
	free(cold);
	free(warm);
	return 0;
}

static int fanout(struct cove_config *cfg, const char *dir, int n)
{
	long one = 0;
	if (make_snapshot(cfg, dir, &one) < 0)
		return 1;
	print_snapshot_size(dir);
	struct cove_sandbox **sb = calloc((size_t)n, sizeof(*sb));
	char err[512];
	double t0 = now_ms();
	for (int i = 0; i < n; i++)
		if (cove_restore(cfg, dir, &sb[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "snapbench: fork %d: %s\n", i, err);
			return 1;
		}
	for (int i = 0; i < n; i++)
		if (exec_true(sb[i]) < 0)
			return 1;
	double t = now_ms() - t0;
	long pss = 0, rss = 0;
	for (int i = 0; i < n; i++) {
		pss += rollup(cove_vmm_pid(sb[i]), "Pss");
		rss += rollup(cove_vmm_pid(sb[i]), "Rss");
	}
	printf("%d forks to first exec result: %.1f ms\n", n, t);
	printf("one cold sandbox after its first exec: PSS %ld kB\n", one);
	printf("%d running forks: summed PSS %ld kB, summed RSS %ld kB\n", n, pss, rss);
	printf("summed PSS of %d forks / one sandbox: %.2f\n", n, (double)pss / (double)one);
	for (int i = 0; i < n; i++)
		cove_free(sb[i]);
	free(sb);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: snapbench latency|fanout N SNAPSHOT_DIR\n");
		return 2;
	}
	struct cove_config cfg;
	cove_config_defaults(&cfg);
	int n = atoi(argv[2]);
	if (n < 1)
		n = 1;
	if (!strcmp(argv[1], "latency"))
		return latency(&cfg, argv[3], n);
	if (!strcmp(argv[1], "fanout"))
		return fanout(&cfg, argv[3], n);
	fprintf(stderr, "snapbench: unknown mode %s\n", argv[1]);
	return 2;
}
