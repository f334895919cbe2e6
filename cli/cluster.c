/* cove cluster status|drain: GET /cluster and POST /cluster/nodes/<id>/drain
 * on coved's Unix socket (libcurl), with an API key from $COVE_API_KEY or
 * a keys file.  Every call has a 10 s deadline. */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cluster.h"
#include "cli/coved_call.h"
#include "daemon/conf/keys.h"
#include "errf.h"

#define DEFAULT_SOCKET "/run/coved/coved.sock" /* coved's default (daemon/conf/config.c) */
#define NODES_MAX      4096
#define NODE_ID_MAX    32
#define TEXT_MAX       96 /* a string cell: node id, address */
#define TEMPLATES_MAX  48 /* the TEMPLATES cell, "..." past it */

static const char cluster_usage[] =
    "usage: cove cluster status [--json] [OPTIONS]\n"
    "       cove cluster drain NODE [--undo] [OPTIONS]\n"
    "  status: coved's nodes, their state, committed/total vCPUs and MiB,\n"
    "          sandboxes and templates (--json: coved's document as is)\n"
    "  drain:  new sandboxes are no longer placed on NODE (--undo: again)\n"
    "  OPTIONS: --socket PATH (default " DEFAULT_SOCKET ")\n"
    "           --key-file FILE (an API keys file, mode 0600; its first key),\n"
    "           else the key in $COVE_API_KEY\n";

/* A key we put in a header: printable ASCII without spaces. */
static bool key_ok(const char *k)
{
	if (!*k)
		return false;
	for (const char *p = k; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

int cli_cluster_key(const char *key_file, const char *env, char *key, size_t len, char *err,
                    size_t errlen)
{
	if (!key_file) {
		if (!env || !*env)
			return errf(err, errlen, -ENOKEY,
			            "no API key: set $COVE_API_KEY or give --key-file FILE");
		if (!key_ok(env))
			return errf(err, errlen, -EINVAL,
			            "$COVE_API_KEY holds a space or a byte that is not printable "
			            "ASCII");
		if (strlen(env) >= len)
			return errf(err, errlen, -E2BIG, "$COVE_API_KEY is longer than %zu bytes",
			            len - 1);
		strcpy(key, env);
		return 0;
	}
	struct coved_key *keys;
	size_t n;
	int r = coved_keys_load(key_file, &keys, &n, err, errlen);
	if (r < 0)
		return r;
	if (strlen(keys[0].key) >= len)
		r = errf(err, errlen, -E2BIG, "the first key of %s is longer than %zu bytes",
		         key_file, len - 1);
	else
		strcpy(key, keys[0].key);
	coved_keys_free(keys, n);
	return r;
}

/* ---- the table ------------------------------------------------------------ */

struct row {
	char id[TEXT_MAX], addr[TEXT_MAX], templates[TEMPLATES_MAX + 8];
	const char *state;
	bool lost;
	uint64_t vcpus, vcpus_c, mem, mem_c, running, paused;
};

/* s with control and non-ASCII bytes as '?', cut to len - 1. */
static void clean(const char *s, char *out, size_t len)
{
	size_t i = 0;
	for (; s[i] && i + 1 < len; i++)
		out[i] = (unsigned char)s[i] < ' ' || (unsigned char)s[i] >= 0x7f ? '?' : s[i];
	out[i] = 0;
}

/* Optional fields: absent is the default; present of another type fails. */
static int get_uint(json_t *o, const char *k, uint64_t *v)
{
	json_t *x = json_object_get(o, k);
	*v = 0;
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return -1;
	*v = (uint64_t)json_integer_value(x);
	return 0;
}

static int get_bool(json_t *o, const char *k, bool *v)
{
	json_t *x = json_object_get(o, k);
	*v = false;
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_boolean(x))
		return -1;
	*v = json_is_true(x);
	return 0;
}

static int get_str(json_t *o, const char *k, char *out, size_t len)
{
	json_t *x = json_object_get(o, k);
	snprintf(out, len, "-");
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_string(x))
		return -1;
	clean(json_string_value(x), out, len);
	return 0;
}

/* "a,b,c", or the first that fit and "...", or "-". */
static int templates_cell(json_t *a, char *out, size_t len)
{
	snprintf(out, len, "-");
	if (!a)
		return 0;
	if (!json_is_array(a))
		return -1;
	size_t n = 0, i;
	json_t *t;
	json_array_foreach(a, i, t)
	{
		if (!json_is_string(t))
			return -1;
		char name[TEXT_MAX];
		clean(json_string_value(t), name, sizeof(name));
		size_t l = strlen(name);
		if (n + (n ? 1 : 0) + l > TEMPLATES_MAX) {
			snprintf(out + n, len - n, "%s...", n ? "," : "");
			return 0;
		}
		n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "," : "", name);
	}
	return 0;
}

/* One node object into r; self: the id of the coved asked, fenced: its
 * state.  -1 when a field has the wrong type. */
static int node_row(json_t *o, const char *self, bool fenced, struct row *r)
{
	bool ready, draining;
	json_t *sb = json_object_get(o, "sandboxes");
	json_t *id = json_object_get(o, "id");
	if (!json_is_object(o) || !json_is_string(id) || (sb && !json_is_object(sb)))
		return -1;
	if (get_str(o, "id", r->id, sizeof(r->id)) < 0 ||
	    get_str(o, "addr", r->addr, sizeof(r->addr)) < 0 || get_bool(o, "ready", &ready) < 0 ||
	    get_bool(o, "draining", &draining) < 0 || get_uint(o, "vcpus", &r->vcpus) < 0 ||
	    get_uint(o, "vcpus_committed", &r->vcpus_c) < 0 ||
	    get_uint(o, "memory_mib", &r->mem) < 0 ||
	    get_uint(o, "memory_mib_committed", &r->mem_c) < 0 ||
	    (sb && (get_uint(sb, "running", &r->running) < 0 ||
	            get_uint(sb, "paused", &r->paused) < 0)) ||
	    templates_cell(json_object_get(o, "templates"), r->templates, sizeof(r->templates)) < 0)
		return -1;
	bool me = self && !strcmp(json_string_value(id), self);
	r->lost = !ready && !(me && fenced);
	r->state = me && fenced ? "fenced" : !ready ? "lost" : draining ? "draining" : "ready";
	return 0;
}

static int width(int w, const char *s)
{
	return (int)strlen(s) > w ? (int)strlen(s) : w;
}

/* "committed/total". */
static void frac(char *out, size_t len, uint64_t committed, uint64_t total)
{
	snprintf(out, len, "%llu/%llu", (unsigned long long)committed, (unsigned long long)total);
}

static void print_rows(FILE *out, const struct row *rows, size_t n, const struct row *total)
{
	char cpu[48], mem[48];
	int w[5] = { 4, 4, 5, 5, 6 }; /* NODE ADDR STATE VCPUS MEMORY */
	for (size_t i = 0; i <= n; i++) {
		const struct row *r = i < n ? &rows[i] : total;
		frac(cpu, sizeof(cpu), r->vcpus_c, r->vcpus);
		frac(mem, sizeof(mem), r->mem_c, r->mem);
		w[0] = width(w[0], r->id);
		w[1] = width(w[1], r->addr);
		w[2] = width(w[2], r->state);
		w[3] = width(w[3], cpu);
		w[4] = width(w[4], mem);
	}
	fprintf(out, "%-*s  %-*s  %-*s  %*s  %*s  %7s  %6s  %s\n", w[0], "NODE", w[1], "ADDR", w[2],
	        "STATE", w[3], "VCPUS", w[4], "MEMORY", "RUNNING", "PAUSED", "TEMPLATES");
	for (size_t i = 0; i <= n; i++) {
		const struct row *r = i < n ? &rows[i] : total;
		frac(cpu, sizeof(cpu), r->vcpus_c, r->vcpus);
		frac(mem, sizeof(mem), r->mem_c, r->mem);
		fprintf(out, "%-*s  %-*s  %-*s  %*s  %*s  %7llu  %6llu  %s\n", w[0], r->id, w[1],
		        r->addr, w[2], r->state, w[3], cpu, w[4], mem,
		        (unsigned long long)r->running, (unsigned long long)r->paused,
		        r->templates);
	}
}

/* The totals row: the nodes that are not lost (a lost node's room is not
 * there, its sandboxes are being marked dead). */
static void sum_rows(const struct row *rows, size_t n, struct row *t, char *state, size_t len)
{
	size_t live = 0;
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < n; i++) {
		if (rows[i].lost)
			continue;
		live++;
		t->vcpus += rows[i].vcpus;
		t->vcpus_c += rows[i].vcpus_c;
		t->mem += rows[i].mem;
		t->mem_c += rows[i].mem_c;
		t->running += rows[i].running;
		t->paused += rows[i].paused;
	}
	snprintf(t->id, sizeof(t->id), "total");
	snprintf(t->addr, sizeof(t->addr), "%zu node%s", n, n == 1 ? "" : "s");
	snprintf(state, len, "%zu live", live);
	t->state = state;
	snprintf(t->templates, sizeof(t->templates), "-");
}

/* The document's "node" and "self": who answered and whether it is fenced. */
static int self_of(json_t *doc, const char **self, bool *fenced, char *reason, size_t len)
{
	json_t *node = json_object_get(doc, "node"), *me = json_object_get(doc, "self");
	*self = json_is_string(node) ? json_string_value(node) : NULL;
	*fenced = false;
	snprintf(reason, len, "-");
	if ((node && !json_is_string(node)) || (me && !json_is_object(me)))
		return -1;
	if (me && (get_bool(me, "fenced", fenced) < 0 || get_str(me, "reason", reason, len) < 0))
		return -1;
	return 0;
}

int cli_cluster_table(FILE *out, const char *doc, size_t len, char *err, size_t errlen)
{
	json_t *d = json_loadb(doc, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *nodes = json_object_get(d, "nodes");
	const char *self;
	bool fenced;
	char reason[256], state[32];
	if (!json_is_object(d) || !json_is_array(nodes) || json_array_size(nodes) > NODES_MAX ||
	    self_of(d, &self, &fenced, reason, sizeof(reason)) < 0) {
		json_decref(d);
		return errf(err, errlen, -EINVAL,
		            "coved's answer is not a cluster document (\"nodes\": [...])");
	}
	size_t n = json_array_size(nodes);
	struct row *rows = calloc(n + 1, sizeof(*rows)), total;
	int r = rows ? 0 : errf(err, errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; r == 0 && i < n; i++)
		if (node_row(json_array_get(nodes, i), self, fenced, &rows[i]) < 0)
			r = errf(err, errlen, -EINVAL,
			         "coved's answer: node %zu has a field of the wrong type", i);
	if (r == 0) {
		sum_rows(rows, n, &total, state, sizeof(state));
		print_rows(out, rows, n, &total);
		if (fenced) {
			char me[TEXT_MAX];
			clean(self ? self : "?", me, sizeof(me));
			fprintf(out, "this coved (%s) is fenced: %s\n", me, reason);
		}
	}
	free(rows);
	json_decref(d);
	return r;
}

/* ---- the calls ------------------------------------------------------------ */

/* An error answer as one line: its "message", cleaned, or the status. */
static void say_status(const char *prog, long status, const struct cli_answer *a)
{
	json_t *d = a->p ? json_loadb(a->p, a->len, 0, NULL) : NULL;
	const char *m = json_string_value(json_object_get(d, "message"));
	char msg[256];
	clean(m ? m : "", msg, sizeof(msg));
	if (status == 401)
		fprintf(stderr, "%s: coved refused the API key (401%s%s)\n", prog, m ? ", " : "",
		        msg);
	else
		fprintf(stderr, "%s: coved answered %ld%s%s\n", prog, status, m ? ": " : "", msg);
	json_decref(d);
}

struct cluster_opts {
	const char *sock, *key_file;
	bool json, undo;
	char key[CLI_CLUSTER_KEY_MAX];
};

/* The shared options; the first word left is argv[optind].  -1 on bad
 * usage (said), 1 for --help (usage printed). */
static int parse(int argc, char **argv, const char *prog, bool drain, struct cluster_opts *o)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "undo", no_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (c == 's') {
			o->sock = optarg;
		} else if (c == 'k') {
			o->key_file = optarg;
		} else if (c == 'j' && !drain) {
			o->json = true;
		} else if (c == 'u' && drain) {
			o->undo = true;
		} else if (c == 'h') {
			fputs(cluster_usage, stdout);
			return 1;
		} else {
			fprintf(stderr, "%s: unknown or incomplete option '%s'\n%s", prog,
			        argv[optind - 1], cluster_usage);
			return -1;
		}
	}
	if (argc - optind != (drain ? 1 : 0)) {
		fprintf(stderr, "%s: %s\n%s", prog,
		        drain ? "needs one node id" : "takes no argument", cluster_usage);
		return -1;
	}
	return 0;
}

/* The key into o->key: 0, or 1 with the one line said. */
static int key_for(struct cluster_opts *o, const char *prog)
{
	char err[512];
	if (cli_cluster_key(o->key_file, getenv("COVE_API_KEY"), o->key, sizeof(o->key), err,
	                    sizeof(err)) == 0)
		return 0;
	fprintf(stderr, "%s: %s\n", prog, err);
	return 1;
}

/* GET /cluster: the answer in *a, or 1 with the one line said. */
static int get_cluster(const struct cluster_opts *o, const char *prog, struct cli_answer *a)
{
	char err[512];
	long status = 0;
	if (cli_coved_call(o->sock, o->key, "GET", "/cluster", NULL, &status, a, err, sizeof(err)) <
	    0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	if (status == 404) {
		fprintf(stderr, "%s: coved is not in cluster mode\n", prog);
		return 1;
	}
	if (status != 200) {
		say_status(prog, status, a);
		return 1;
	}
	return 0;
}

static int cluster_status(int argc, char **argv)
{
	const char *prog = "cove cluster status";
	struct cluster_opts o = { .sock = DEFAULT_SOCKET };
	int p = parse(argc, argv, prog, false, &o);
	if (p)
		return p > 0 ? 0 : 2;
	if (key_for(&o, prog))
		return 1;
	struct cli_answer a = { 0 };
	int r = get_cluster(&o, prog, &a);
	char err[512];
	if (r == 0 && o.json) {
		printf("%s%s", a.p ? a.p : "", a.len && a.p[a.len - 1] == '\n' ? "" : "\n");
	} else if (r == 0 && cli_cluster_table(stdout, a.p ? a.p : "", a.len, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", prog, err);
		r = 1;
	}
	explicit_bzero(o.key, sizeof(o.key));
	free(a.p);
	return r;
}

static bool node_id_ok(const char *id)
{
	size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-");
	return n > 0 && n <= NODE_ID_MAX && id[n] == 0;
}

static int cluster_drain(int argc, char **argv)
{
	const char *prog = "cove cluster drain";
	struct cluster_opts o = { .sock = DEFAULT_SOCKET };
	int p = parse(argc, argv, prog, true, &o);
	if (p)
		return p > 0 ? 0 : 2;
	const char *id = argv[optind];
	if (!node_id_ok(id)) {
		fprintf(stderr, "%s: '%.64s' is not a node id (1 to 32 of a-z 0-9 -)\n", prog, id);
		return 2;
	}
	if (key_for(&o, prog))
		return 1;
	char path[96], err[512];
	snprintf(path, sizeof(path), "/cluster/nodes/%s/drain", id);
	struct cli_answer a = { 0 };
	long status = 0;
	int r = cli_coved_call(o.sock, o.key, "POST", path,
	                       o.undo ? "{\"drain\":false}" : "{\"drain\":true}", &status, &a, err,
	                       sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
	} else if (status == 204 || status == 200) {
		printf("node %s %s\n", id,
		       o.undo ? "takes new sandboxes again" : "is draining: no new sandboxes");
	} else if (status == 404) {
		/* No cluster routes, or no such node: GET /cluster tells. */
		struct cli_answer g = { 0 };
		if (get_cluster(&o, prog, &g) == 0)
			say_status(prog, status, &a);
		free(g.p);
	} else {
		say_status(prog, status, &a);
	}
	explicit_bzero(o.key, sizeof(o.key));
	free(a.p);
	return r == 0 && (status == 204 || status == 200) ? 0 : 1;
}

static int cluster_command(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "status"))
		return cluster_status(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "drain"))
		return cluster_drain(argc - 1, argv + 1);
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(cluster_usage, stdout);
		return 0;
	}
	fprintf(stderr, "cove cluster: needs status or drain\n%s", cluster_usage);
	return 2;
}

int cli_cluster(int argc, char **argv)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "cove cluster: libcurl did not start\n");
		return 1;
	}
	int r = cluster_command(argc, argv);
	curl_global_cleanup();
	return r;
}
