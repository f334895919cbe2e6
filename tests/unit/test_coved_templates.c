/* Unit tests: coved's template builds' pure parts: POST /templates's body
 * (daemon/api/template_body.c), the e2b SDK's build bodies mapped to steps
 * (RUN with a user, ENV pairs, COPY's relative dest and owner), the
 * refusals naming their field, the bounded build log
 * (daemon/sandboxes/buildlog.c) and the tenants' store names
 * (daemon/sandboxes/build_req.c). */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "daemon/api/template_body.h"
#include "daemon/sandboxes/build_req.h"
#include "daemon/sandboxes/buildlog.h"
#include "unit.h"

static char err[512];

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static int native(const char *text, struct coved_build_req *r)
{
	json_t *o = json_loads(text, JSON_ALLOW_NUL, NULL);
	ck_assert_ptr_nonnull(o);
	err[0] = 0;
	int k = coved_parse_template(o, r, err, sizeof(err));
	json_decref(o);
	return k;
}

static int e2b(const char *text, struct coved_build_req *r)
{
	json_t *o = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(o);
	memset(r, 0, sizeof(*r));
	err[0] = 0;
	int k = coved_parse_e2b_build(o, r, err, sizeof(err));
	json_decref(o);
	return k;
}

START_TEST(native_fields)
{
	struct coved_build_req r;
	ck_assert_int_eq(native("{\"name\": \"py-app\", \"from\": \"oci:/srv/img:1\", \"steps\": ["
	                        "{\"run\": \"echo hi\"}, {\"env\": {\"A\": \"1\", \"B\": \"\"}},"
	                        "{\"workdir\": \"/app\"}, {\"user\": \"app:app\"},"
	                        "{\"copy\": {\"files\": \"" HASH "\", \"src\": \"src\","
	                        " \"dest\": \"/app/\", \"chown\": \"app\", \"mode\": \"755\"}}],"
	                        "\"start_cmd\": \"srv\", \"ready_port\": 8080, \"cpus\": 2,"
	                        "\"memory_mib\": 512, \"disk_mib\": 2048, \"force\": true}",
	                        &r),
	                 0);
	ck_assert_str_eq(r.name, "py-app");
	ck_assert_str_eq(r.from, "oci:/srv/img:1");
	ck_assert_ptr_null(r.from_template);
	ck_assert_uint_eq(r.nsteps, 6);
	ck_assert_int_eq(r.steps[0].kind, COVED_BSTEP_RUN);
	ck_assert_str_eq(r.steps[0].arg, "echo hi");
	ck_assert_int_eq(r.steps[1].kind, COVED_BSTEP_ENV);
	ck_assert_str_eq(r.steps[1].arg, "A=1");
	ck_assert_str_eq(r.steps[2].arg, "B=");
	ck_assert_int_eq(r.steps[3].kind, COVED_BSTEP_WORKDIR);
	ck_assert_int_eq(r.steps[4].kind, COVED_BSTEP_USER);
	ck_assert_int_eq(r.steps[5].kind, COVED_BSTEP_COPY);
	ck_assert_str_eq(r.steps[5].files, HASH);
	ck_assert_str_eq(r.steps[5].src, "src");
	ck_assert_str_eq(r.steps[5].dest, "/app/");
	ck_assert_str_eq(r.steps[5].chown, "app");
	ck_assert_str_eq(r.steps[5].mode, "755");
	ck_assert_str_eq(r.start_cmd, "srv");
	ck_assert_uint_eq(r.ready_port, 8080);
	ck_assert_uint_eq(r.cpus, 2);
	ck_assert_uint_eq(r.memory_mib, 512);
	ck_assert_uint_eq(r.disk_mib, 2048);
	ck_assert(r.force);
	coved_build_req_free(&r);
	ck_assert_int_eq(native("{\"name\": \"child\", \"from_template\": \"py-app\"}", &r), 0);
	ck_assert_str_eq(r.from_template, "py-app");
	ck_assert_uint_eq(r.nsteps, 0);
	coved_build_req_free(&r);
}
END_TEST

/* Each refusal is one line naming what is wrong. */
static void refused(const char *text, const char *needle)
{
	struct coved_build_req r;
	ck_assert_int_eq(native(text, &r), -EINVAL);
	ck_assert_msg(strstr(err, needle), "'%s' lacks '%s'", err, needle);
	ck_assert_ptr_null(strchr(err, '\n'));
	coved_build_req_free(&r);
}

START_TEST(native_refusals)
{
	refused("{\"from\": \"x\"}", "'name'");
	refused("{\"name\": \"a.b\", \"from\": \"x\"}", "'name'");
	refused("{\"name\": \"snap-1\", \"from\": \"x\"}", "'name'");
	refused("{\"name\": \"a\"}", "exactly one of 'from' and 'from_template'");
	refused("{\"name\": \"a\", \"from\": \"x\", \"from_template\": \"b\"}", "exactly one");
	refused("{\"name\": \"a\", \"from\": \"x\", \"bogus\": 1}", "unknown field 'bogus'");
	refused("{\"name\": \"a\", \"from\": \"\"}", "'from'");
	refused("{\"name\": \"a\", \"from\": \"x\", \"cpus\": 65}", "'cpus'");
	refused("{\"name\": \"a\", \"from\": \"x\", \"ready_port\": 80}", "need a 'start_cmd'");
	refused("{\"name\": \"a\", \"from\": \"x\", \"start_cmd\": \"s\", \"ready_port\": 1,"
	        "\"ready_cmd\": \"c\"}",
	        "at most one of");
	refused(
	    "{\"name\": \"a\", \"from\": \"x\", \"steps\": [{\"run\": \"a\", \"user\": \"b\"}]}",
	    "steps[0]");
	refused("{\"name\": \"a\", \"from\": \"x\", \"steps\": [{\"shell\": \"a\"}]}",
	        "unknown step 'shell'");
	refused("{\"name\": \"a\", \"from\": \"x\", \"steps\": [{\"workdir\": \"rel\"}]}",
	        "steps[0].workdir");
	refused("{\"name\": \"a\", \"from\": \"x\", \"steps\": [{\"env\": {\"1A\": \"v\"}}]}",
	        "not a variable name");
	refused("{\"name\": \"a\", \"from\": \"x\", \"steps\": [{\"copy\": {\"files\": \"abc\","
	        "\"dest\": \"/x\"}}]}",
	        "steps[0].copy.files");
	refused("{\"name\": \"a\", \"from\": \"x\", \"steps\": [{\"copy\": {\"files\": \"" HASH
	        "\", \"src\": \"../etc\", \"dest\": \"/x\"}}]}",
	        "steps[0].copy.src");
	refused("{\"name\": \"a\", \"from\": \"x\", \"steps\": [{\"copy\": {\"files\": \"" HASH
	        "\", \"dest\": \"x\"}}]}",
	        "steps[0].copy.dest");
	refused("{\"name\": \"a\", \"from\": \"x\", \"steps\": [{\"copy\": {\"files\": \"" HASH
	        "\", \"dest\": \"/x\", \"mode\": \"rwx\"}}]}",
	        "steps[0].copy.mode");
	refused("{\"name\": \"a\", \"from\": \"x\", \"steps\": [{\"run\": \"a\\u0000b\"}]}",
	        "without NUL");
	/* Too many steps, counted before any is read. */
	char big[8192] = "{\"name\": \"a\", \"from\": \"x\", \"steps\": [";
	for (int i = 0; i < 65; i++)
		strcat(big, i ? ",{\"run\": \"x\"}" : "{\"run\": \"x\"}");
	strcat(big, "]}");
	refused(big, "at most 64 steps");
}
END_TEST

/* What Template().fromImage(...).setWorkdir().runCmd(..., {user})
 * .copy(...).setEnvs(...).setStartCmd(...) sends. */
START_TEST(e2b_mapping)
{
	struct coved_build_req r;
	ck_assert_int_eq(
	    e2b("{\"fromImage\": \"oci-archive:/t/img.tar\", \"startCmd\": \"srv\","
	        " \"readyCmd\": \"sleep 1\", \"force\": false, \"steps\": ["
	        "{\"type\": \"WORKDIR\", \"args\": [\"/app\"], \"force\": false},"
	        "{\"type\": \"RUN\", \"args\": [\"id -un\", \"nobody\"], \"force\": false},"
	        "{\"type\": \"USER\", \"args\": [\"app\"], \"force\": false},"
	        "{\"type\": \"RUN\", \"args\": [\"make\", \"root\"], \"force\": false},"
	        "{\"type\": \"COPY\", \"args\": [\"folder\", \"./data/\", \"\", \"\"],"
	        " \"force\": false, \"filesHash\": \"" HASH "\", \"resolveSymlinks\": false},"
	        "{\"type\": \"COPY\", \"args\": [\"a.txt\", \"/etc/a.txt\", \"root\", \"0640\"],"
	        " \"filesHash\": \"" HASH "\"},"
	        "{\"type\": \"ENV\", \"args\": [\"K1\", \"v1\", \"K2\", \"v 2\"]}]}",
	        &r),
	    0);
	ck_assert_str_eq(r.from, "oci-archive:/t/img.tar");
	ck_assert_str_eq(r.start_cmd, "srv");
	ck_assert_str_eq(r.ready_cmd, "sleep 1");
	const struct {
		enum coved_bstep_kind kind;
		const char *arg;
	} want[] = {
		{ COVED_BSTEP_WORKDIR, "/app" },
		{ COVED_BSTEP_USER, "nobody" }, /* the RUN's own user, around it */
		{ COVED_BSTEP_RUN, "id -un" },
		{ COVED_BSTEP_USER, "root" }, /* back: no USER was set before */
		{ COVED_BSTEP_USER, "app" },
		{ COVED_BSTEP_USER, "root" },
		{ COVED_BSTEP_RUN, "make" },
		{ COVED_BSTEP_USER, "app" },
		{ COVED_BSTEP_COPY, NULL },
		{ COVED_BSTEP_COPY, NULL },
		{ COVED_BSTEP_ENV, "K1=v1" },
		{ COVED_BSTEP_ENV, "K2=v 2" },
	};
	ck_assert_uint_eq(r.nsteps, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < r.nsteps; i++) {
		ck_assert_int_eq(r.steps[i].kind, want[i].kind);
		if (want[i].arg)
			ck_assert_str_eq(r.steps[i].arg, want[i].arg);
	}
	/* A relative dest under the last WORKDIR; no owner: the last USER. */
	ck_assert_str_eq(r.steps[8].src, "folder");
	ck_assert_str_eq(r.steps[8].dest, "/app/data/");
	ck_assert_str_eq(r.steps[8].chown, "app");
	ck_assert_str_eq(r.steps[8].files, HASH);
	ck_assert_str_eq(r.steps[9].dest, "/etc/a.txt");
	ck_assert_str_eq(r.steps[9].chown, "root");
	ck_assert_str_eq(r.steps[9].mode, "0640");
	ck_assert_str_eq(r.steps[8].mode, "");
	coved_build_req_free(&r);

	ck_assert_int_eq(e2b("{\"fromTemplate\": \"base-app\", \"steps\": []}", &r), 0);
	ck_assert_str_eq(r.from_template, "base-app");
	coved_build_req_free(&r);
}
END_TEST

static void e2b_refused(const char *text, const char *needle)
{
	struct coved_build_req r;
	ck_assert_int_eq(e2b(text, &r), -EINVAL);
	ck_assert_msg(strstr(err, needle), "'%s' lacks '%s'", err, needle);
	coved_build_req_free(&r);
}

START_TEST(e2b_refusals)
{
	e2b_refused("{\"steps\": []}", "exactly one of 'fromImage' and 'fromTemplate'");
	e2b_refused("{\"fromImage\": \"x\", \"fromImageRegistry\": {\"type\": \"registry\"}}",
	            "fromImageRegistry");
	e2b_refused("{\"fromImage\": \"x\", \"steps\": [{\"type\": \"COPY\", \"args\": [\"a\","
	            " \"/b\", \"\", \"0855\"], \"filesHash\": \"" HASH "\"}]}",
	            "steps[0]: COPY's mode must be 3 or 4 octal digits");
	e2b_refused("{\"fromImage\": \"x\", \"steps\": [{\"type\": \"COPY\", \"args\": [\"a\","
	            " \"b\"], \"filesHash\": \"" HASH "\"}]}",
	            "needs a WORKDIR");
	e2b_refused("{\"fromImage\": \"x\", \"steps\": [{\"type\": \"COPY\", \"args\": [\"a\","
	            " \"/b\"]}]}",
	            "filesHash");
	e2b_refused("{\"fromImage\": \"x\", \"steps\": [{\"type\": \"ENV\", \"args\": [\"K\"]}]}",
	            "steps[0] ENV");
	e2b_refused("{\"fromImage\": \"x\", \"steps\": [{\"type\": \"HEALTHCHECK\"}]}",
	            "'HEALTHCHECK' is not supported");
	e2b_refused("{\"fromImage\": \"x\", \"steps\": [{\"type\": \"RUN\", \"args\": [1]}]}",
	            "steps[0]: RUN");
	e2b_refused("{\"fromImage\": \"x\", \"readyCmd\": \"true\"}", "needs a 'startCmd'");

	json_t *o = json_loads("{\"name\": \"app:v1\"}", 0, NULL);
	struct coved_build_req r;
	ck_assert_int_eq(coved_parse_e2b_request(o, &r, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "tags"));
	json_decref(o);
	o = json_loads("{\"name\": \"app\", \"cpuCount\": 2, \"memoryMB\": 1024, \"tags\": []}", 0,
	               NULL);
	ck_assert_int_eq(coved_parse_e2b_request(o, &r, err, sizeof(err)), 0);
	ck_assert_str_eq(r.name, "app");
	ck_assert_uint_eq(r.cpus, 2);
	ck_assert_uint_eq(r.memory_mib, 1024);
	json_decref(o);
	coved_build_req_free(&r);
}
END_TEST

/* A tenant's name lives apart from another tenant's of the same name, and
 * a store name is never a templateID (a dot). */
START_TEST(store_names)
{
	char a[COVED_BUILD_STORE_LEN + 1], b[COVED_BUILD_STORE_LEN + 1];
	char c[COVED_BUILD_STORE_LEN + 1];
	coved_build_store_name("alice", "app", a);
	coved_build_store_name("bob", "app", b);
	coved_build_store_name("alic", "eapp", c);
	ck_assert_uint_eq(strlen(a), COVED_BUILD_STORE_LEN);
	ck_assert_str_ne(a, b);
	ck_assert_str_ne(a, c);
	ck_assert(strncmp(a, "t.", 2) == 0);
	ck_assert(!coved_build_name_ok(a));
	coved_build_store_name("alice", "app", b);
	ck_assert_str_eq(a, b);
}
END_TEST

struct seen {
	char text[64][160];
	uint64_t seq[64];
	size_t n;
};

static void collect(void *opaque, const struct coved_blog_line *l)
{
	struct seen *s = opaque;
	if (s->n < 64) {
		snprintf(s->text[s->n], sizeof(s->text[0]), "%s", l->text);
		s->seq[s->n++] = l->seq;
	}
}

START_TEST(log_lines)
{
	struct coved_blog l;
	coved_blog_init(&l, 1 << 20);
	coved_blog_output(&l, 1, 0, "one\ntw", 6);
	coved_blog_output(&l, 2, 1, "err\n", 4);
	coved_blog_output(&l, 3, 0, "o\r\nthree", 8);
	coved_blog_add(&l, 4, COVED_BLOG_INFO, "bad \x01\xff utf8 \xc3\xa9", 14);
	coved_blog_flush(&l, 5);
	struct seen s = { .n = 0 };
	uint64_t next = coved_blog_read(&l, 0, 100, collect, &s);
	ck_assert_uint_eq(s.n, 5);
	ck_assert_uint_eq(next, 5);
	ck_assert_str_eq(s.text[0], "one");
	ck_assert_str_eq(s.text[1], "err");
	ck_assert_str_eq(s.text[2], "two");
	ck_assert_str_eq(s.text[3], "bad ?? utf8 \xc3\xa9");
	ck_assert_str_eq(s.text[4], "three");
	/* From an offset, at most max. */
	s.n = 0;
	ck_assert_uint_eq(coved_blog_read(&l, 3, 1, collect, &s), 4);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_str_eq(s.text[0], "bad ?? utf8 \xc3\xa9");
	coved_blog_free(&l);

	/* A line over the bound is cut into lines of the bound. */
	coved_blog_init(&l, 1 << 20);
	char *big = malloc(COVED_BLOG_LINE_MAX * 2 + 10);
	memset(big, 'x', COVED_BLOG_LINE_MAX * 2 + 10);
	coved_blog_output(&l, 1, 0, big, COVED_BLOG_LINE_MAX * 2 + 10);
	coved_blog_flush(&l, 1);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_uint_eq(strlen(l.v[0].text), COVED_BLOG_LINE_MAX);
	ck_assert_uint_eq(strlen(l.v[2].text), 10);
	free(big);
	coved_blog_free(&l);
}
END_TEST

/* Past the cap the oldest lines after the head go; readers see one line
 * in their place, and the sequence numbers run on. */
START_TEST(log_bound)
{
	struct coved_blog l;
	coved_blog_init(&l, 4000);
	char line[128];
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(line, sizeof(line), "line %04d of the build output", i);
		coved_blog_add(&l, i, COVED_BLOG_INFO, line, (size_t)n);
		ck_assert_uint_le(l.bytes, 4000);
	}
	ck_assert_uint_gt(l.dropped, 0);
	ck_assert_uint_eq(l.n + l.dropped, 1000);
	ck_assert_str_eq(l.v[0].text, "line 0000 of the build output"); /* the head stays */
	ck_assert_str_eq(l.v[l.n - 1].text, "line 0999 of the build output");
	struct seen s = { .n = 0 };
	coved_blog_read(&l, 0, 64, collect, &s);
	size_t h = l.head;
	ck_assert_uint_gt(h, 0);
	ck_assert_uint_le(h * 29, 1000); /* the head: the first quarter */
	ck_assert_str_eq(s.text[h - 1], l.v[h - 1].text);
	ck_assert_ptr_nonnull(strstr(s.text[h], "lines dropped"));
	ck_assert_uint_eq(s.seq[h], h);
	ck_assert_uint_eq(s.seq[h + 1], l.v[h].seq);
	/* A reader past the gap gets no marker. */
	s.n = 0;
	ck_assert_uint_eq(coved_blog_read(&l, 999, 64, collect, &s), 1000);
	ck_assert_uint_eq(s.n, 1);
	/* A finished build's log shrinks: one gap still, every line counted. */
	coved_blog_limit(&l, 1000);
	ck_assert_uint_le(l.bytes, 1000);
	ck_assert_uint_eq(l.n + l.dropped, 1000);
	ck_assert_str_eq(l.v[0].text, "line 0000 of the build output");
	ck_assert_str_eq(l.v[l.n - 1].text, "line 0999 of the build output");
	s.n = 0;
	ck_assert_uint_eq(coved_blog_read(&l, 0, 64, collect, &s), 1000);
	ck_assert_uint_eq(s.n, l.n + 1);
	unsigned long long gone = 0;
	for (size_t i = 0; i < s.n; i++)
		if (sscanf(s.text[i], "... %llu lines dropped", &gone) == 1)
			ck_assert_uint_eq(gone, l.dropped);
	ck_assert_uint_eq(gone, l.dropped);
	coved_blog_free(&l);
}
END_TEST

/* A record read back at start-up: taken only under the name its tenant
 * and name make; one that was building says so; a bad field refuses it. */
START_TEST(record_read_back)
{
	char store[COVED_BUILD_STORE_LEN + 1], file[64], other[64];
	coved_build_store_name("alice", "web", store);
	snprintf(file, sizeof(file), "%s.json", store);
	coved_build_store_name("bob", "web", other);
	strcat(other, ".json");
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I}", "tenant", "alice", "name", "web",
	                      "build_id", "0123456789abcdef0123456789abcdef0123", "status",
	                      "building", "created_ms", (json_int_t)5);
	struct coved_build_record r;
	ck_assert_int_eq(coved_build_record_parse(o, file, &r), 0);
	ck_assert_str_eq(r.store, store);
	ck_assert(r.running && !r.ready && !r.built);
	ck_assert_int_eq(r.created_ms, 5);
	ck_assert_int_eq(coved_build_record_parse(o, other, &r), -EINVAL);
	json_object_set_new(o, "status", json_string("ready"));
	ck_assert_int_eq(coved_build_record_parse(o, file, &r), 0);
	ck_assert(r.ready && r.built && !r.running);
	json_object_set_new(o, "build_id", json_string("short"));
	ck_assert_int_eq(coved_build_record_parse(o, file, &r), -EINVAL);
	json_decref(o);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coved_templates");
	TCase *tc = tcase_create("templates");
	tcase_add_test(tc, native_fields);
	tcase_add_test(tc, native_refusals);
	tcase_add_test(tc, e2b_mapping);
	tcase_add_test(tc, e2b_refusals);
	tcase_add_test(tc, store_names);
	tcase_add_test(tc, log_lines);
	tcase_add_test(tc, log_bound);
	tcase_add_test(tc, record_read_back);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
