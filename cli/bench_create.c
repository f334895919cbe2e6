/* cove bench create: a create through coved and its first command, as E2B's
 * SDK does them (POST /sandboxes, then process.Process/Start of `true` on
 * coved's envd surface), side by side with the same command in a sandbox
 * already running (A B A B ...), over coved's Unix socket.  Whether each
 * create was handed a warm sandbox comes from coved_warm_hits_total; with
 * a warm pool the bench waits for it to be full before each create.
 * --work counts each create's work (bench_work.h) with coved and every
 * cove-vmm and cove-egress already running tracked, the warm ones among
 * them. */
#include "cli/bench_create.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/bench_report.h"
#include "cli/bench_work.h"
#include "cli/bench_work_report.h"
#include "cli/cluster.h"
#include "cli/coved_call.h"
#include "clock.h"
#include "errf.h"

#define DEFAULT_SOCKET   "/run/coved/coved.sock"
#define CREATE_MS        300000 /* a create's deadline (a template may be built) */
#define EXEC_MS          60000
#define WARM_WAIT_MS     120000 /* for the warm pool to be full again */
#define KEY_MAX          512
#define ENVELOPE_MAX     (1u << 20)
#define FIRST_EXECS      3 /* in the running sandbox, before the samples */
#define TEMPLATE_ID_MAX  64
#define SANDBOX_ID_MAX   64
#define TOKEN_MAX        128
#define BENCH_CREATE_MAX 10000

static const char usage[] =
    "usage: cove bench create [-n N] [--template ID] [--socket PATH] [--key-file FILE]\n"
    "                         [--coved-pid PID] [--work] [--json FILE]\n"
    "  N creates through coved, each followed by its first command (`true` through\n"
    "  coved's envd surface), A B A B with that command in a running sandbox.\n"
    "  The API key: --key-file (its first key), else $COVE_API_KEY.\n";

struct bc {
	const char *sock, *key_file, *tid, *json_path;
	int n;
	bool work;
	pid_t coved_pid;
	char key[KEY_MAX];
	struct bench_work *w;
};

struct sb {
	char id[SANDBOX_ID_MAX + 1], token[TOKEN_MAX + 1];
};

/* A string field of an answer, checked: printable, no spaces, < len. */
static int field(json_t *o, const char *k, char *out, size_t len)
{
	const char *s = json_string_value(json_object_get(o, k));
	if (!s || !*s || strlen(s) >= len)
		return -1;
	for (const char *p = s; *p; p++)
		if (!isgraph((unsigned char)*p))
			return -1;
	strcpy(out, s);
	return 0;
}

/* POST /sandboxes {"templateID": tid}: *s filled, or -1 with the line said. */
static int create(struct bc *b, struct sb *s)
{
	char body[128], err[512];
	snprintf(body, sizeof(body), "{\"templateID\": \"%s\"}", b->tid);
	struct cli_answer a = { 0 };
	long st = 0;
	static const char *const json[] = { "Content-Type: application/json", NULL };
	struct cli_coved_req q = { .method = "POST",
		                   .path = "/sandboxes",
		                   .headers = json,
		                   .body = body,
		                   .len = strlen(body),
		                   .timeout_ms = CREATE_MS };
	int r = cli_coved_request(b->sock, b->key, &q, &st, &a, err, sizeof(err));
	json_t *o = r == 0 ? json_loadb(a.p ? a.p : "", a.len, 0, NULL) : NULL;
	if (r == 0 && (st != 201 || field(o, "sandboxID", s->id, sizeof(s->id)) < 0 ||
	               field(o, "envdAccessToken", s->token, sizeof(s->token)) < 0)) {
		const char *m = json_string_value(json_object_get(o, "message"));
		snprintf(err, sizeof(err), "coved answered %ld%s%.200s", st, m ? ": " : "",
		         m ? m : "");
		r = -1;
	}
	if (r < 0)
		fprintf(stderr, "cove bench create: create: %s\n", err);
	json_decref(o);
	free(a.p);
	return r < 0 ? -1 : 0;
}

static void delete (struct bc *b, const struct sb *s)
{
	char path[128], err[512];
	snprintf(path, sizeof(path), "/sandboxes/%s", s->id);
	struct cli_answer a = { 0 };
	long st = 0;
	if (cli_coved_call(b->sock, b->key, "DELETE", path, NULL, &st, &a, err, sizeof(err)) < 0)
		fprintf(stderr, "cove bench create: delete %s: %s\n", s->id, err);
	free(a.p);
}

/* The exit code in a Process/Start answer (Connect envelopes: a flag byte,
 * a big-endian length, JSON), or -1 when it holds no end event or an
 * error. */
static int exit_code(const unsigned char *p, size_t len)
{
	int code = -1;
	for (size_t off = 0; len - off >= 5;) {
		uint32_t n = (uint32_t)p[off + 1] << 24 | (uint32_t)p[off + 2] << 16 |
		             (uint32_t)p[off + 3] << 8 | p[off + 4];
		if (n > ENVELOPE_MAX || n > len - off - 5)
			return -1;
		json_t *o = json_loadb((const char *)p + off + 5, n, 0, NULL);
		json_t *end = json_object_get(json_object_get(o, "event"), "end");
		if (end) {
			json_t *c = json_object_get(end, "exitCode");
			code = c ? (int)json_integer_value(c) : 0; /* protobuf's JSON omits 0 */
		}
		if ((p[off] & 2) && json_object_get(o, "error"))
			code = -1;
		json_decref(o);
		off += 5 + n;
	}
	return code;
}

/* `true` in s through coved's envd surface: 0, or -1 with the line said. */
static int run_true(struct bc *b, const struct sb *s)
{
	static const char msg[] = "{\"process\": {\"cmd\": \"true\", \"args\": []}}";
	unsigned char body[5 + sizeof(msg)];
	size_t n = sizeof(msg) - 1;
	body[0] = 0;
	body[1] = body[2] = 0;
	body[3] = (unsigned char)(n >> 8);
	body[4] = (unsigned char)n;
	memcpy(body + 5, msg, n);
	char id[32 + SANDBOX_ID_MAX], tok[32 + TOKEN_MAX], err[512];
	snprintf(id, sizeof(id), "E2b-Sandbox-Id: %s", s->id);
	snprintf(tok, sizeof(tok), "X-Access-Token: %s", s->token);
	const char *const h[] = { "Content-Type: application/connect+json", id, tok, NULL };
	struct cli_coved_req q = { .method = "POST",
		                   .path = "/process.Process/Start",
		                   .headers = h,
		                   .body = body,
		                   .len = 5 + n,
		                   .timeout_ms = EXEC_MS };
	struct cli_answer a = { 0 };
	long st = 0;
	int r = cli_coved_request(b->sock, NULL, &q, &st, &a, err, sizeof(err));
	explicit_bzero(tok, sizeof(tok));
	int code = r == 0 && st == 200 ? exit_code((const unsigned char *)a.p, a.len) : -1;
	if (r == 0 && code != 0)
		snprintf(err, sizeof(err), "answered %ld, exit code %d", st, code);
	if (r < 0 || code != 0)
		fprintf(stderr, "cove bench create: true in %s: %s\n", s->id, err);
	free(a.p);
	return r < 0 || code != 0 ? -1 : 0;
}

/* A counter or gauge of coved's /metrics, or NAN. */
static double metric(struct bc *b, const char *name)
{
	char err[512];
	struct cli_answer a = { 0 };
	long st = 0;
	double v = NAN;
	if (cli_coved_call(b->sock, b->key, "GET", "/metrics", NULL, &st, &a, err, sizeof(err)) ==
	        0 &&
	    st == 200 && a.p) {
		size_t len = strlen(name);
		for (char *l = a.p; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
			if (!strncmp(l, name, len) && l[len] == ' ') {
				v = strtod(l + len + 1, NULL);
				break;
			}
	}
	free(a.p);
	return v;
}

/* With a warm pool: until it is full again (or WARM_WAIT_MS). */
static void warm_wait(struct bc *b)
{
	double size = metric(b, "coved_warm_size");
	if (isnan(size) || size <= 0)
		return;
	int64_t deadline = mono_ms() + WARM_WAIT_MS;
	while (metric(b, "coved_warm_ready") < size && mono_ms() < deadline)
		usleep(100000);
}

/* Every running process named comm (its /proc/PID/comm), tracked as it. */
static int track_all(struct bench_work *w, const char *comm, pid_t *only_one)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		char path[300], name[64] = "";
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = 0;
		fclose(f);
		if (strcmp(name, comm) != 0)
			continue;
		pid_t pid = (pid_t)atoi(e->d_name);
		if (only_one)
			*only_one = n == 0 ? pid : -1;
		else if (work_track(w, pid, comm) < 0)
			n = -ENOMEM;
		if (n >= 0)
			n++;
	}
	closedir(d);
	return n;
}

static int setup_work(struct bc *b)
{
	char err[512];
	pid_t coved = b->coved_pid;
	if (!coved && (track_all(NULL, "coved", &coved) <= 0 || coved <= 0)) {
		fprintf(stderr, "cove bench create: --work: not exactly one coved runs here; give "
		                "--coved-pid PID\n");
		return -1;
	}
	if (!(b->w = work_open(err, sizeof(err)))) {
		fprintf(stderr, "cove bench create: %s\n", err);
		return -1;
	}
	if (work_track(b->w, getpid(), "cove") < 0 || work_track(b->w, coved, "coved") < 0 ||
	    track_all(b->w, "cove-vmm", NULL) < 0 || track_all(b->w, "cove-egress", NULL) < 0) {
		fprintf(stderr, "cove bench create: out of memory\n");
		return -1;
	}
	return 0;
}

static int parse(int argc, char **argv, struct bc *b)
{
	enum { O_SOCKET = 256, O_KEY_FILE, O_TEMPLATE, O_JSON, O_WORK, O_COVED_PID };
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "key-file", required_argument, NULL, O_KEY_FILE },
		{ "template", required_argument, NULL, O_TEMPLATE },
		{ "json", required_argument, NULL, O_JSON },
		{ "work", no_argument, NULL, O_WORK },
		{ "coved-pid", required_argument, NULL, O_COVED_PID },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	optind = 2;
	opterr = 0;
	int o;
	char *end;
	long v;
	while ((o = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (o) {
		case 'n':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > BENCH_CREATE_MAX) {
				fprintf(stderr, "cove bench create: -n must be 1 to %d, got '%s'\n",
				        BENCH_CREATE_MAX, optarg);
				return 2;
			}
			b->n = (int)v;
			break;
		case O_SOCKET:
			b->sock = optarg;
			break;
		case O_KEY_FILE:
			b->key_file = optarg;
			break;
		case O_TEMPLATE:
			if (!*optarg || strlen(optarg) > TEMPLATE_ID_MAX ||
			    strpbrk(optarg, "\"\\")) {
				fprintf(
				    stderr,
				    "cove bench create: --template takes a templateID of 1 to %d "
				    "bytes without quotes or backslashes\n",
				    TEMPLATE_ID_MAX);
				return 2;
			}
			b->tid = optarg;
			break;
		case O_JSON:
			b->json_path = optarg;
			break;
		case O_WORK:
			b->work = true;
			break;
		case O_COVED_PID:
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > INT32_MAX) {
				fprintf(stderr,
				        "cove bench create: --coved-pid takes a pid, got '%s'\n",
				        optarg);
				return 2;
			}
			b->coved_pid = (pid_t)v;
			break;
		case 'h':
			fputs(usage, stdout);
			return 1;
		default:
			fprintf(stderr, "cove bench create: unknown or incomplete option '%s'\n",
			        argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "cove bench create: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	char err[512];
	if (cli_cluster_key(b->key_file, getenv("COVE_API_KEY"), b->key, sizeof(b->key), err,
	                    sizeof(err)) < 0) {
		fprintf(stderr, "cove bench create: %s\n", err);
		return 2;
	}
	return 0;
}

static void report(int n, const double *cr, const double *fc, const double *tot, const double *ex,
                   int warm)
{
	printf("create -> first command through coved, %d samples, %d handed a warm sandbox "
	       "(ms)\n%-28s %9s %9s %9s %9s %9s\n",
	       n, warm, "phase", "min", "p50", "p90", "p99", "max");
	bench_row_w(28, "create (POST /sandboxes)", cr, n);
	bench_row_w(28, "its first command", fc, n);
	bench_row_w(28, "create -> first command", tot, n);
	bench_row_w(28, "command, running sandbox", ex, n);
	double *a = malloc(sizeof(double) * (size_t)n), *c = malloc(sizeof(double) * (size_t)n);
	if (a && c) {
		memcpy(a, tot, sizeof(double) * (size_t)n);
		memcpy(c, ex, sizeof(double) * (size_t)n);
		qsort(a, (size_t)n, sizeof(double), bench_cmp);
		qsort(c, (size_t)n, sizeof(double), bench_cmp);
		printf("create -> first command / command p50: %.2f\n",
		       bench_pct(a, n, 50) / bench_pct(c, n, 50));
	}
	free(a);
	free(c);
}

int bench_create(int argc, char **argv)
{
	struct bc b = { .sock = DEFAULT_SOCKET, .tid = "base", .n = 10 };
	int rc = parse(argc, argv, &b);
	if (rc)
		return rc == 1 ? 0 : rc;
	double *cr = calloc((size_t)b.n, sizeof(double)), *fc = calloc((size_t)b.n, sizeof(double)),
	       *tot = calloc((size_t)b.n, sizeof(double)),
	       *ex = calloc((size_t)b.n, sizeof(double));
	json_t *samples = json_array();
	struct sb run = { 0 };
	bool have_run = false;
	int warm = 0;
	rc = 1;
	if (!cr || !fc || !tot || !ex || !samples) {
		fprintf(stderr, "cove bench create: out of memory\n");
		goto out;
	}
	/* The running sandbox B is measured in, and a few commands in it first. */
	if (create(&b, &run) < 0)
		goto out;
	have_run = true;
	for (int i = 0; i < FIRST_EXECS; i++)
		if (run_true(&b, &run) < 0)
			goto out;
	if (b.work && setup_work(&b) < 0)
		goto out;
	for (int i = 0; i < b.n; i++) {
		char err[512];
		warm_wait(&b);
		double hits = metric(&b, "coved_warm_hits_total");
		struct sb s;
		/* The warm VMMs made since the last sample: one is handed out now. */
		if (b.w && (track_all(b.w, "cove-vmm", NULL) < 0 ||
		            track_all(b.w, "cove-egress", NULL) < 0)) {
			fprintf(stderr, "cove bench create: out of memory\n");
			goto out;
		}
		if (b.w && work_begin(b.w, err, sizeof(err)) < 0) {
			fprintf(stderr, "cove bench create: %s\n", err);
			goto out;
		}
		int64_t t0 = mono_ns();
		if (create(&b, &s) < 0)
			goto out;
		int64_t t1 = mono_ns();
		int r = run_true(&b, &s);
		int64_t t2 = mono_ns();
		if (r == 0 && b.w && (r = work_end(b.w, err, sizeof(err))) < 0)
			fprintf(stderr, "cove bench create: %s\n", err);
		json_t *work = json_object();
		if (r == 0 && b.w)
			work_json(b.w, work);
		delete (&b, &s);
		if (r < 0) {
			json_decref(work);
			goto out;
		}
		bool was_warm = metric(&b, "coved_warm_hits_total") > hits;
		warm += was_warm;
		int64_t t3 = mono_ns();
		if (run_true(&b, &run) < 0) {
			json_decref(work);
			goto out;
		}
		int64_t t4 = mono_ns();
		cr[i] = (double)(t1 - t0) / 1e6;
		fc[i] = (double)(t2 - t1) / 1e6;
		tot[i] = (double)(t2 - t0) / 1e6;
		ex[i] = (double)(t4 - t3) / 1e6;
		json_array_append_new(
		    samples,
		    json_pack("{s:s, s:{s:f, s:f, s:f, s:f}, s:b, s:o}", "system", "cove", "phases",
		              "create", cr[i], "first_command", fc[i], "create_to_first_command",
		              tot[i], "command_running", ex[i], "warm", was_warm, "work", work));
	}
	report(b.n, cr, fc, tot, ex, warm);
	if (b.w)
		work_report(samples);
	rc = 0;
	if (b.json_path) {
		json_t *doc = json_pack("{s:s, s:s, s:O}", "benchmark", "create", "template", b.tid,
		                        "samples", samples);
		if (!doc || json_dump_file(doc, b.json_path, JSON_INDENT(1)) < 0) {
			fprintf(stderr, "cove bench create: cannot write %s\n", b.json_path);
			rc = 1;
		}
		json_decref(doc);
	}
out:
	if (have_run)
		delete (&b, &run);
	work_close(b.w);
	explicit_bzero(b.key, sizeof(b.key));
	json_decref(samples);
	free(cr);
	free(fc);
	free(tot);
	free(ex);
	return rc;
}
