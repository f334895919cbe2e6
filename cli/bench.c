/* cove bench: boot, restore, fork and exec latency, with work counts.
 *
 *   cove bench boot    [-n N] [options] [--json FILE]   N cold starts
 *   cove bench restore [-n N] [options] [--json FILE]   N restores of one snapshot
 *   cove bench fork    [-n N] [--count C] ...           N rounds of C forks at once
 *   cove bench exec    [-n N] ...                       N exec round trips, one sandbox
 *   cove bench boot --vs qemu ...   each cold start followed by a QEMU microvm
 *                                   boot of the same kernel, image and memory
 *
 * Times are CLOCK_MONOTONIC milliseconds from the moment before libcove
 * starts the sandbox: cove-vmm's process start, VM created, first KVM_RUN
 * and guest init come from cove-vmm itself ({"op":"stats"}), the rest from
 * this process.  Work counts (KVM exits by reason, disk bytes read, VMM
 * memory outside guest RAM) are read after the first exec.  The QEMU
 * comparison is bench_qemu.c's, the SVG plot bench_plot.c's. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/bench_create.h"
#include "cli/bench_html.h"
#include "cli/bench_plot.h"
#include "cli/bench_qemu.h"
#include "cli/bench_report.h"
#include "cli/bench_sample.h"
#include "cli/bench_work.h"
#include "cli/bench_work_report.h"
#include "cli/options.h"
#include "clock.h"
#include "cove.h"
#include "cove_limits.h"
#include "errf.h"

enum ab { AB_ON, AB_OFF, AB_AB };

struct bench {
	const char *mode;
	int n, count;
	bool vs_qemu;
	bool parallel;    /* fork: a thread per fork, as `cove fork` */
	enum ab prefetch; /* restore: the working-set record */
	enum ab memcache; /* restore, fork: the memory cache */
	const char *plot_path;
	const char *html_path; /* --html: the report page (bench_html.c) */
	const char *image;     /* --image as given; NULL: the default */
	struct cove_config cfg;
	const char *json_path;
	json_t *samples;
	struct bench_work *work; /* --work: NULL without */
};

static void add_sample(struct bench *b, const double *ph, json_t *work)
{
	json_array_append_new(b->samples, json_pack("{s:s, s:o, s:o}", "system", "cove", "phases",
	                                            bench_phases_json(ph), "work",
	                                            work ? work : json_object()));
}

/* Whether restore sample i uses the working-set record. */
static bool sample_prefetch(const struct bench *b, int i)
{
	return b->prefetch == AB_ON || (b->prefetch == AB_AB && i % 2 == 0);
}

/* Whether restore sample i maps its memory from the memory cache. */
static bool sample_memcache(const struct bench *b, int i)
{
	return b->memcache == AB_ON || (b->memcache == AB_AB && i % 2 == 0);
}

/* A restore without the record: it is moved aside (and libcove told not
 * to record a new one) until the restore is done (on = false), then put
 * back (on = true). */
static void record_aside(const char *snap, bool aside)
{
	char a[PATH_MAX + 16], o[PATH_MAX + 16];
	snprintf(a, sizeof(a), "%s/memory.ws", snap);
	snprintf(o, sizeof(o), "%s/memory.ws.off", snap);
	if (aside) {
		setenv("COVE_PREFETCH", "0", 1);
		(void)rename(a, o);
	} else {
		(void)rename(o, a);
		unsetenv("COVE_PREFETCH");
	}
}

/* One restore and exec, unmeasured, so that the snapshot has its
 * working-set record before the samples (made without the memory cache,
 * so that an A/B of the cache compares one record); then, where samples
 * use the cache, one more through it, so that its copy is made before
 * the samples as a template's is (at its build). */
static int record_working_set(struct bench *b, const char *snap)
{
	char err[512];
	struct cove_sandbox *sb;
	for (int i = 0; i < (b->memcache == AB_OFF ? 1 : 2); i++) {
		b->cfg.memcache = i ? COVE_MEMCACHE_ALL : COVE_MEMCACHE_NONE;
		if (cove_restore(&b->cfg, snap, &sb, err, sizeof(err)) < 0 ||
		    bench_exec_true(sb, err, sizeof(err)) < 0) {
			fprintf(stderr, "cove bench: recording the working set: %s\n", err);
			return -1;
		}
		cove_free(sb);
	}
	return 0;
}

/* p50 of first_exec and of the exits over the samples where pick says
 * on (or off): one side of an A/B. */
static void ab_report(const struct bench *b, double (*ph)[PH_COUNT], const char *what,
                      bool (*pick)(const struct bench *, int), bool on)
{
	double fe[b->n], ex[b->n], pfl[b->n];
	int m = 0;
	for (int i = 0; i < b->n; i++) {
		if (pick(b, i) != on)
			continue;
		json_t *w = json_object_get(json_array_get(b->samples, (size_t)i), "work");
		fe[m] = ph[i][PH_FIRST_EXEC];
		ex[m] = (double)json_integer_value(json_object_get(w, "exits"));
		pfl[m] = (double)json_integer_value(json_object_get(w, "host_minflt"));
		m++;
	}
	if (!m)
		return;
	qsort(fe, (size_t)m, sizeof(double), bench_cmp);
	qsort(ex, (size_t)m, sizeof(double), bench_cmp);
	qsort(pfl, (size_t)m, sizeof(double), bench_cmp);
	printf("%s %-3s (n=%d): p50 first_exec %.1f ms, KVM exits %.0f, cove-vmm page faults "
	       "%.0f\n",
	       what, on ? "on" : "off", m, bench_pct(fe, m, 50), bench_pct(ex, m, 50),
	       bench_pct(pfl, m, 50));
}

/* A cold sandbox, snapshotted into a fresh directory and stopped. */
static int make_snapshot(struct bench *b, char *dir, size_t len)
{
	char err[512];
	snprintf(dir, len, "%s/cove-bench-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "cove bench: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	rmdir(dir); /* cove_snapshot wants a new directory */
	struct cove_sandbox *sb;
	if (cove_start(&b->cfg, &sb, err, sizeof(err)) < 0 ||
	    bench_exec_true(sb, err, sizeof(err)) < 0 ||
	    cove_snapshot_sync(sb, SNAPSHOT_SYNC_MS, err, sizeof(err)) < 0 ||
	    cove_snapshot(sb, dir, true, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove bench: making the snapshot: %s\n", err);
		return -1;
	}
	cove_free(sb);
	return 0;
}

static void remove_snapshot(const char *dir)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cove bench: could not remove %s\n", dir);
	cove_memcache_prune(); /* its memory's copy, if a sample made one */
}

/* boot and restore: one sample per sandbox. */
static int bench_start(struct bench *b, const char *snap)
{
	double(*ph)[PH_COUNT] = calloc((size_t)b->n, sizeof(*ph));
	double(*qph)[PH_COUNT] = calloc((size_t)b->n, sizeof(*qph));
	char err[512];
	for (int i = 0; i < b->n; i++) {
		for (int p = 0; p < PH_COUNT; p++)
			ph[i][p] = NAN;
		struct cove_sandbox *sb;
		bool aside = snap && !sample_prefetch(b, i);
		if (aside)
			record_aside(snap, true);
		b->cfg.memcache = sample_memcache(b, i) ? COVE_MEMCACHE_ALL : COVE_MEMCACHE_NONE;
		if (b->work && work_begin(b->work, err, sizeof(err)) < 0) {
			fprintf(stderr, "cove bench: sample %d: %s\n", i, err);
			free(ph);
			free(qph);
			return 1;
		}
		double t0 = mono_ns() / 1e6;
		int r = snap ? cove_restore(&b->cfg, snap, &sb, err, sizeof(err))
		             : cove_start(&b->cfg, &sb, err, sizeof(err));
		if (r == 0) {
			ph[i][PH_AGENT_READY] = mono_ns() / 1e6 - t0;
			if ((r = bench_exec_true(sb, err, sizeof(err))) == 0)
				ph[i][PH_FIRST_EXEC] = mono_ns() / 1e6 - t0;
			else
				cove_free(sb);
		}
		/* The window ends at the first exec's answer; the record is put
		 * back after it, out of the counts. */
		if (r == 0 && b->work && (r = work_end(b->work, err, sizeof(err))) < 0)
			cove_free(sb);
		if (aside)
			record_aside(snap, false);
		if (r < 0) {
			fprintf(stderr, "cove bench: sample %d: %s\n", i, err);
			free(ph);
			free(qph);
			return 1;
		}
		json_t *work = bench_vmm_sample(sb, t0, ph[i]);
		if (b->work)
			work_json(b->work, work);
		(void)cove_stop(sb);
		ph[i][PH_TEARDOWN] = mono_ns() / 1e6 - t0;
		cove_free(sb);
		if (snap) {
			json_object_set_new(work, "prefetch_used", json_boolean(!aside));
			json_object_set_new(work, "memcache_asked",
			                    json_boolean(b->cfg.memcache == COVE_MEMCACHE_ALL));
		}
		add_sample(b, ph[i], work);
		if (b->vs_qemu) {
			json_t *qwork = NULL;
			if (bench_qemu_sample(&b->cfg, qph[i], &qwork, err, sizeof(err)) < 0) {
				json_decref(qwork);
				fprintf(stderr, "cove bench: qemu sample %d: %s\n", i, err);
				free(ph);
				free(qph);
				return 1;
			}
			bench_qemu_add_sample(b->samples, ph[i], qph[i], qwork);
		}
	}
	if (b->vs_qemu)
		bench_qemu_report(ph, qph, b->n);
	if (b->plot_path &&
	    bench_plot_svg(b->plot_path, b->mode, ph, b->vs_qemu ? qph : NULL, b->n) < 0)
		fprintf(stderr, "cove bench: cannot write '%s'\n", b->plot_path);
	if (b->html_path) {
		unsigned int cpus = b->cfg.cpus ? b->cfg.cpus : COVE_CPUS_DEFAULT;
		uint64_t mib = b->cfg.memory_mib ? b->cfg.memory_mib : COVE_MEMORY_DEFAULT_MIB;
		const struct bench_html_run run = { .mode = b->mode,
			                            .image = b->image,
			                            .cpus = cpus,
			                            .memory_mib = mib,
			                            .n = b->n };
		if (bench_html_write(b->html_path, &run, ph, b->vs_qemu ? qph : NULL) < 0)
			fprintf(stderr, "cove bench: cannot write '%s'\n", b->html_path);
	}
	free(qph);
	bench_header(b->mode, b->n);
	for (int p = 0; p < PH_COUNT; p++) {
		double *col = malloc(sizeof(double) * (size_t)b->n);
		for (int i = 0; i < b->n; i++)
			col[i] = ph[i][p];
		bench_row(bench_phase_names[p], col, b->n);
		free(col);
	}
	if (snap && b->prefetch == AB_AB) {
		ab_report(b, ph, "prefetch", sample_prefetch, true);
		ab_report(b, ph, "prefetch", sample_prefetch, false);
	}
	if (snap && b->memcache == AB_AB) {
		ab_report(b, ph, "memcache", sample_memcache, true);
		ab_report(b, ph, "memcache", sample_memcache, false);
	}
	if (b->work)
		work_report(b->samples);
	free(ph);
	return 0;
}

/* kB of key ("Pss", "Rss") in /proc/PID/smaps_rollup, or -1. */
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

/* --parallel: a thread per fork, each a restore and its first exec (what
 * `cove fork` does, then a command in each).  A thread stays until the
 * round is measured: the bench's cove-vmm children die with the thread
 * that started them (lib/cove.h, detached). */
struct fork_round {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int pending; /* forks not yet up (or failed) */
	bool release;
	const struct cove_config *cfg;
	const char *snap;
	struct fork_task {
		struct fork_round *round;
		pthread_t thread;
		bool started;
		struct cove_sandbox *sb;
		int r;
		char err[512];
	} * task;
};

static void *fork_task_run(void *arg)
{
	struct fork_task *f = arg;
	struct fork_round *rd = f->round;
	f->r = cove_restore(rd->cfg, rd->snap, &f->sb, f->err, sizeof(f->err));
	if (f->r == 0)
		f->r = bench_exec_true(f->sb, f->err, sizeof(f->err));
	pthread_mutex_lock(&rd->lock);
	rd->pending--;
	pthread_cond_broadcast(&rd->cond);
	while (!rd->release)
		pthread_cond_wait(&rd->cond, &rd->lock);
	pthread_mutex_unlock(&rd->lock);
	return NULL;
}

/* Starts b->count forks at once and waits until each is up or failed: 0,
 * or -1 with the first failure in err; sb[] holds what came up. */
static int fork_round_run(struct fork_round *rd, struct bench *b, const char *snap,
                          struct cove_sandbox **sb, char *err, size_t errlen)
{
	*rd = (struct fork_round){ .cfg = &b->cfg, .snap = snap };
	pthread_mutex_init(&rd->lock, NULL);
	pthread_cond_init(&rd->cond, NULL);
	rd->task = calloc((size_t)b->count, sizeof(*rd->task));
	if (!rd->task) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int rc = 0;
	for (int k = 0; k < b->count; k++) {
		struct fork_task *f = &rd->task[k];
		f->round = rd;
		pthread_mutex_lock(&rd->lock);
		rd->pending++;
		pthread_mutex_unlock(&rd->lock);
		int e = pthread_create(&f->thread, NULL, fork_task_run, f);
		f->started = e == 0;
		if (e) {
			pthread_mutex_lock(&rd->lock);
			rd->pending--;
			pthread_mutex_unlock(&rd->lock);
			snprintf(err, errlen, "cannot start a thread: %s", strerror(e));
			rc = -1;
			break;
		}
	}
	pthread_mutex_lock(&rd->lock);
	while (rd->pending > 0)
		pthread_cond_wait(&rd->cond, &rd->lock);
	pthread_mutex_unlock(&rd->lock);
	for (int k = 0; k < b->count; k++) {
		sb[k] = rd->task[k].sb;
		if (rd->task[k].started && rd->task[k].r < 0 && !rc) {
			snprintf(err, errlen, "%s", rd->task[k].err);
			rc = -1;
		}
	}
	return rc;
}

/* Lets the threads go (their cove-vmm children with them) and joins them. */
static void fork_round_end(struct fork_round *rd, int count)
{
	if (!rd->task)
		return;
	pthread_mutex_lock(&rd->lock);
	rd->release = true;
	pthread_cond_broadcast(&rd->cond);
	pthread_mutex_unlock(&rd->lock);
	for (int k = 0; k < count; k++)
		if (rd->task[k].started)
			pthread_join(rd->task[k].thread, NULL);
	free(rd->task);
	rd->task = NULL;
	pthread_mutex_destroy(&rd->lock);
	pthread_cond_destroy(&rd->cond);
}

/* count restores of one snapshot, one after another (each returns once
 * its notice is sent), then every fork's first exec, timed until the last
 * has answered; or, with --parallel, a thread per fork doing both; then
 * each fork's PSS, RSS and private memory (Private_Clean + Private_Dirty
 * of its cove-vmm, guest RAM included).  With one CPU the threads only
 * compete (docs/benchmarks.md). */
static int bench_fork(struct bench *b, const char *snap)
{
	double *t = calloc((size_t)b->n, sizeof(double));
	struct cove_sandbox **sb = calloc((size_t)b->count, sizeof(*sb));
	char err[512];
	int rc = 0;
	b->cfg.memcache = b->memcache == AB_OFF ? COVE_MEMCACHE_NONE : COVE_MEMCACHE_ALL;
	for (int i = 0; i < b->n && !rc; i++) {
		if (b->work && work_begin(b->work, err, sizeof(err)) < 0) {
			fprintf(stderr, "cove bench: fork round %d: %s\n", i, err);
			rc = 1;
			break;
		}
		double t0 = mono_ns() / 1e6;
		int started = 0;
		struct fork_round rd = { 0 };
		if (b->parallel) {
			if (fork_round_run(&rd, b, snap, sb, err, sizeof(err)) == 0)
				started = b->count;
		} else {
			while (started < b->count &&
			       cove_restore(&b->cfg, snap, &sb[started], err, sizeof(err)) == 0)
				started++;
			for (int k = 0; k < started && started == b->count; k++)
				if (bench_exec_true(sb[k], err, sizeof(err)) < 0)
					started = -1;
		}
		t[i] = mono_ns() / 1e6 - t0;
		if (started == b->count && b->work && work_end(b->work, err, sizeof(err)) < 0)
			started = -1;
		if (started != b->count) {
			fprintf(stderr, "cove bench: fork round %d: %s\n", i, err);
			rc = 1;
		}
		long pss = 0, rss = 0, pmin = LONG_MAX, pmax = 0, psum = 0;
		json_t *priv = json_array();
		for (int k = 0; k < b->count && !rc; k++) {
			pid_t pid = cove_vmm_pid(sb[k]);
			pss += rollup(pid, "Pss");
			rss += rollup(pid, "Rss");
			long p = rollup(pid, "Private_Clean") + rollup(pid, "Private_Dirty");
			json_array_append_new(priv, json_integer(p));
			psum += p;
			pmin = p < pmin ? p : pmin;
			pmax = p > pmax ? p : pmax;
		}
		for (int k = 0; k < b->count; k++)
			if (sb[k])
				cove_free(sb[k]);
		fork_round_end(&rd, b->count);
		memset(sb, 0, sizeof(*sb) * (size_t)b->count);
		if (rc) {
			json_decref(priv);
			break;
		}
		printf("round %d: %d forks to first exec result in %.1f ms; summed PSS %ld kB, RSS "
		       "%ld kB; private per fork min %ld, mean %ld, max %ld kB\n",
		       i, b->count, t[i], pss, rss, pmin, psum / b->count, pmax);
		json_t *work = json_object();
		if (b->work)
			work_json(b->work, work);
		json_array_append_new(b->samples,
		                      json_pack("{s:s, s:i, s:f, s:I, s:I, s:o, s:o}", "system",
		                                "cove", "forks", b->count, "all_first_exec_ms",
		                                t[i], "pss_kb", (json_int_t)pss, "rss_kb",
		                                (json_int_t)rss, "private_kb", priv, "work", work));
	}
	if (!rc) {
		bench_header("fork", b->n);
		bench_row("all_first_exec", t, b->n);
		if (b->work)
			work_report(b->samples);
	}
	free(sb);
	free(t);
	return rc;
}

static int bench_exec(struct bench *b)
{
	char err[512];
	struct cove_sandbox *sb;
	if (cove_start(&b->cfg, &sb, err, sizeof(err)) < 0) {
		fprintf(stderr, "cove bench: %s\n", err);
		return 1;
	}
	double *t = calloc((size_t)b->n, sizeof(double));
	int rc = 0;
	for (int i = 0; i < b->n; i++) {
		double t0 = mono_ns() / 1e6;
		if (bench_exec_true(sb, err, sizeof(err)) < 0) {
			fprintf(stderr, "cove bench: exec %d: %s\n", i, err);
			rc = 1;
			break;
		}
		t[i] = mono_ns() / 1e6 - t0;
		json_array_append_new(b->samples,
		                      json_pack("{s:s, s:f}", "system", "cove", "rtt_ms", t[i]));
	}
	cove_free(sb);
	if (!rc) {
		bench_header("exec", b->n);
		bench_row("rtt", t, b->n);
	}
	free(t);
	return rc;
}

/* on, off or ab (alternated samples, on first) for option opt. */
static int parse_ab(const char *opt, const char *arg, enum ab *out)
{
	static const char *const names[] = { [AB_ON] = "on", [AB_OFF] = "off", [AB_AB] = "ab" };
	for (int i = 0; i < 3; i++)
		if (!strcmp(arg, names[i])) {
			*out = (enum ab)i;
			return 0;
		}
	fprintf(stderr, "cove bench: %s is on, off or ab, got '%s'\n", opt, arg);
	return -1;
}

static const char bench_usage[] =
    "usage: cove bench boot|restore|fork|exec [-n N] [--count C] [--cpus N] [--memory MiB]\n"
    "                  [--image NAME|PATH] [--kernel PATH] [--json FILE] [--vs qemu]\n"
    "                  [--plot FILE.svg] [--html FILE.html] [--prefetch on|off|ab]\n"
    "                  [--memcache on|off|ab]"
    "\n"
    "                  [--parallel] [--work]\n"
    "       cove bench create [-n N] [--template ID] [--socket PATH] [--key-file FILE]\n"
    "                  [--coved-pid PID] [--work] [--json FILE]   (through coved)\n";

/* What cannot be checked option by option: 0, or 2 with a message. */
static int bench_check(const struct bench *b, bool boot, bool restore, bool fork_)
{
	if ((b->plot_path || b->html_path) && !boot && !restore) {
		fprintf(stderr, "cove bench: --plot and --html show boot and restore phases\n");
		return 2;
	}
	if (b->work && !restore && !fork_) {
		fprintf(stderr, "cove bench: --work counts restore and fork\n");
		return 2;
	}
	if (b->parallel && !fork_) {
		fprintf(stderr, "cove bench: --parallel is for cove bench fork\n");
		return 2;
	}
	if (b->vs_qemu && !boot) {
		fprintf(stderr,
		        "cove bench: --vs qemu compares cold boots only (cove bench boot)\n");
		return 2;
	}
	return 0;
}

/* The benchmark b->mode names; restore and fork on a snapshot made (and
 * removed) here.  The exit status. */
static int bench_run(struct bench *b, bool boot, bool restore, bool exec)
{
	int rc;
	char snap[PATH_MAX] = "";
	if (boot) {
		rc = bench_start(b, NULL);
	} else if (exec) {
		rc = bench_exec(b);
	} else if (make_snapshot(b, snap, sizeof(snap)) < 0) {
		rc = 1;
	} else if (b->prefetch != AB_OFF && record_working_set(b, snap) < 0) {
		rc = 1;
		remove_snapshot(snap);
	} else {
		if (b->prefetch == AB_OFF)
			setenv("COVE_PREFETCH", "0", 1);
		rc = restore ? bench_start(b, snap) : bench_fork(b, snap);
		remove_snapshot(snap);
	}
	return rc;
}

/* --json FILE: the samples with the benchmark's shape; the exit status. */
static int bench_write_json(const struct bench *b)
{
	int rc = 0;
	unsigned int cpus = b->cfg.cpus ? b->cfg.cpus : COVE_CPUS_DEFAULT;
	uint64_t mib = b->cfg.memory_mib ? b->cfg.memory_mib : COVE_MEMORY_DEFAULT_MIB;
	json_t *doc = json_pack("{s:s, s:i, s:I, s:O}", "benchmark", b->mode, "cpus", cpus,
	                        "memory_mib", (json_int_t)mib, "samples", b->samples);
	if (json_dump_file(doc, b->json_path, JSON_INDENT(1)) < 0) {
		fprintf(stderr, "cove bench: cannot write '%s'\n", b->json_path);
		rc = 1;
	}
	json_decref(doc);
	return rc;
}

int cli_bench(int argc, char **argv)
{
	enum {
		O_JSON = CLI_O_FIRST_FREE,
		O_COUNT,
		O_VS,
		O_PLOT,
		O_HTML,
		O_PREFETCH,
		O_MEMCACHE,
		O_PARALLEL,
		O_WORK
	};
	static const struct option opts[] = {
		{ "cpus", required_argument, NULL, CLI_O_CPUS },
		{ "memory", required_argument, NULL, CLI_O_MEMORY },
		{ "image", required_argument, NULL, CLI_O_IMAGE },
		{ "kernel", required_argument, NULL, CLI_O_KERNEL },
		{ "json", required_argument, NULL, O_JSON },
		{ "count", required_argument, NULL, O_COUNT },
		{ "vs", required_argument, NULL, O_VS },
		{ "plot", required_argument, NULL, O_PLOT },
		{ "html", required_argument, NULL, O_HTML },
		{ "prefetch", required_argument, NULL, O_PREFETCH },
		{ "memcache", required_argument, NULL, O_MEMCACHE },
		{ "parallel", no_argument, NULL, O_PARALLEL },
		{ "work", no_argument, NULL, O_WORK },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct bench b = { .n = 0, .count = 10, .memcache = AB_OFF };
	char *image = NULL;
	bool want_work = false;
	cove_config_defaults(&b.cfg);
	if (argc < 2 || argv[1][0] == '-') {
		fputs(bench_usage, stderr);
		return 2;
	}
	b.mode = argv[1];
	if (!strcmp(b.mode, "create"))
		return bench_create(argc, argv); /* through coved: options of its own */
	bool boot = !strcmp(b.mode, "boot"), restore = !strcmp(b.mode, "restore"),
	     fork_ = !strcmp(b.mode, "fork"), exec = !strcmp(b.mode, "exec");
	if (!boot && !restore && !fork_ && !exec) {
		fprintf(
		    stderr,
		    "cove bench: unknown benchmark '%s' (boot, restore, fork, exec or create)\n",
		    b.mode);
		return 2;
	}
	optind = 2;
	opterr = 0;
	int o;
	unsigned long v;
	while ((o = getopt_long(argc, argv, ":hn:", opts, NULL)) != -1) {
		int r = cli_config_option(&b.cfg, &image, o, optarg, "cove bench");
		if (r < 0)
			return 2;
		if (r > 0)
			continue;
		switch (o) {
		case 'n':
			if (cli_parse_num(optarg, 100000, &v) < 0 || v == 0) {
				fprintf(stderr, "cove bench: -n must be 1 to 100000, got '%s'\n",
				        optarg);
				return 2;
			}
			b.n = (int)v;
			break;
		case O_COUNT:
			if (cli_parse_num(optarg, 1000, &v) < 0 || v == 0) {
				fprintf(stderr, "cove bench: --count must be 1 to 1000, got '%s'\n",
				        optarg);
				return 2;
			}
			b.count = (int)v;
			break;
		case O_JSON:
			b.json_path = optarg;
			break;
		case O_PLOT:
			b.plot_path = optarg;
			break;
		case O_HTML:
			b.html_path = optarg;
			break;
		case O_PREFETCH:
		case O_MEMCACHE:
			if (parse_ab(o == O_PREFETCH ? "--prefetch" : "--memcache", optarg,
			             o == O_PREFETCH ? &b.prefetch : &b.memcache) < 0)
				return 2;
			break;
		case O_PARALLEL:
			b.parallel = true;
			break;
		case O_WORK:
			want_work = true;
			break;
		case O_VS:
			if (strcmp(optarg, "qemu")) {
				fprintf(stderr, "cove bench: --vs knows only 'qemu', got '%s'\n",
				        optarg);
				return 2;
			}
			b.vs_qemu = true;
			break;
		case 'h':
			fputs(bench_usage, stdout);
			return 0;
		case ':':
			fprintf(stderr, "cove bench: option '%s' needs a value\n",
			        argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "cove bench: unknown option '%s'\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "cove bench: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!b.n)
		b.n = exec ? 100 : fork_ ? 1 : 5;
	b.work = want_work ? (struct bench_work *)1 : NULL; /* for bench_check */
	int rc = bench_check(&b, boot, restore, fork_);
	b.work = NULL;
	if (rc == 0 && want_work) {
		char err[512] = "";
		if (!(b.work = work_open(err, sizeof(err))) ||
		    work_track(b.work, getpid(), "cove") < 0) {
			fprintf(stderr, "cove bench: %s\n", err[0] ? err : "out of memory");
			rc = 1;
		}
	}
	if (rc == 0) {
		b.image = image;
		b.samples = json_array();
		rc = bench_run(&b, boot, restore, exec);
		if (!rc && b.json_path)
			rc = bench_write_json(&b);
		json_decref(b.samples);
	}
	work_close(b.work);
	free(image);
	return rc;
}
