/* Unit tests: traces (daemon/trace).  W3C traceparent is parsed strictly
 * (version 00, lowercase hex of the right lengths, ids not all zero) and
 * formatted back; tracestate and OTEL_EXPORTER_OTLP_HEADERS are checked
 * and an error never shows a header's value; the samplers decide as
 * named.  Journal lines stamped with ids become OTLP spans: hex ids of 32
 * and 16 characters, times as nanosecond strings, parents the sandbox's
 * span or the caller's, exit codes and paths as attributes, egress
 * decisions as events of the sandbox's span, sent when it ends; a replay
 * of the written lines gives the same spans.  The exporter sends batches
 * to a receiver, and with a collector that never answers it drops and
 * counts what does not fit its queue; an export to an API caller's URL
 * reaches no host address. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/trace/context.h"
#include "daemon/trace/otlp.h"
#include "daemon/trace/span.h"
#include "daemon/trace/tracer.h"
#include "unit.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

START_TEST(traceparent_strict)
{
	struct trace_ctx c;
	ck_assert_int_eq(trace_parse_parent(TP, strlen(TP), &c), 0);
	ck_assert(c.set);
	ck_assert_int_eq(c.flags, 1);
	char out[56];
	trace_format_parent(&c, out);
	ck_assert_str_eq(out, TP);
	static const char *const bad[] = {
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* version */
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  /* uppercase */
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01",  /* zero trace */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  /* zero span */
		"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",   /* short */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", /* long */
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* separator */
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",  /* flags */
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(trace_parse_parent(bad[i], strlen(bad[i]), &c), -1);
		ck_assert(!c.set);
	}
	ck_assert_int_eq(trace_parse_parent(NULL, 0, &c), -1);
}
END_TEST

START_TEST(tracestate_and_headers)
{
	ck_assert(trace_state_valid("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", 39));
	ck_assert(trace_state_valid("", 0));
	ck_assert(!trace_state_valid("novalue", 7));
	ck_assert(!trace_state_valid("a=b\x01", 4));
	char big[600];
	memset(big, 'a', sizeof(big));
	big[1] = '=';
	ck_assert(!trace_state_valid(big, sizeof(big)));
	char many[400] = "";
	for (int i = 0; i < 33; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "k%d=v,", i);
	ck_assert(!trace_state_valid(many, strlen(many)));

	struct trace_headers h;
	char err[200];
	const char *s = " api-key = s3cr%3Dt ,x-b=a%20b,,";
	ck_assert_int_eq(trace_parse_headers(s, strlen(s), &h, err, sizeof(err)), 0);
	ck_assert_uint_eq(h.n, 2);
	ck_assert_str_eq(h.line[0], "api-key: s3cr=t");
	ck_assert_str_eq(h.line[1], "x-b: a b");
	trace_headers_free(&h);
	static const char *const bad[] = { "k=s3cret%zz", "no-equals-s3cret", "b@d=s3cret",
		                           "k=s3cret%0a" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(trace_parse_headers(bad[i], strlen(bad[i]), &h, err, sizeof(err)),
		                 -1);
		ck_assert_msg(!strstr(err, "s3cret"), "the error shows the value: %s", err);
		ck_assert_uint_eq(h.n, 0);
	}
	/* A NUL in a key (found by fuzz_trace_context): no header name. */
	ck_assert_int_eq(trace_parse_headers("k\0y=s3cret", 10, &h, err, sizeof(err)), -1);
}
END_TEST

START_TEST(samplers)
{
	struct trace_sampler s;
	char err[200];
	uint8_t id[TRACE_ID_LEN] = { 0 };
	id[15] = 1;
	ck_assert_int_eq(trace_parse_sampler(NULL, NULL, &s, err, sizeof(err)), 0);
	ck_assert(trace_sampled(&s, NULL, id));
	ck_assert_int_eq(trace_parse_sampler("always_off", NULL, &s, err, sizeof(err)), 0);
	ck_assert(!trace_sampled(&s, NULL, id));
	ck_assert_int_eq(trace_parse_sampler("traceidratio", "0.5", &s, err, sizeof(err)), 0);
	ck_assert(trace_sampled(&s, NULL, id)); /* a low id is in */
	memset(id + 8, 0xff, 8);
	ck_assert(!trace_sampled(&s, NULL, id)); /* a high one out */
	ck_assert_int_eq(trace_parse_sampler("parentbased_always_off", NULL, &s, err, sizeof(err)),
	                 0);
	struct trace_ctx p;
	ck_assert_int_eq(trace_parse_parent(TP, strlen(TP), &p), 0);
	ck_assert(trace_sampled(&s, &p, id)); /* the sampled parent decides */
	ck_assert(!trace_sampled(&s, NULL, id));
	ck_assert_int_eq(trace_parse_sampler("traceidratio", "2", &s, err, sizeof(err)), -1);
	ck_assert_int_eq(trace_parse_sampler("sometimes", NULL, &s, err, sizeof(err)), -1);
	ck_assert(strstr(err, "sometimes"));
}
END_TEST

/* ---- spans ------------------------------------------------------------------- */

static json_t *line(const char *text)
{
	json_t *l = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(l);
	return l;
}

static const char *attr(json_t *span, const char *key, const char *kind)
{
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(span, "attributes"), i, a)
	{
		if (!strcmp(json_string_value(json_object_get(a, "key")), key))
			return json_string_value(
			    json_object_get(json_object_get(a, "value"), kind));
	}
	return NULL;
}

static void check_ids(json_t *span)
{
	const char *t = json_string_value(json_object_get(span, "traceId"));
	const char *s = json_string_value(json_object_get(span, "spanId"));
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(strlen(t), 32);
	ck_assert_uint_eq(strlen(s), 16);
	ck_assert_uint_eq(strspn(t, "0123456789abcdef"), 32);
	ck_assert_uint_eq(strspn(s, "0123456789abcdef"), 16);
	json_t *p = json_object_get(span, "parentSpanId");
	if (p)
		ck_assert_uint_eq(strlen(json_string_value(p)), 16);
	ck_assert(json_is_string(json_object_get(span, "startTimeUnixNano")));
	ck_assert(json_is_string(json_object_get(span, "endTimeUnixNano")));
}

/* Stamps each line as coved does, keeps what was written (the dump), and
 * collects the live spans. */
static void run(struct trace_root *r, const struct trace_ctx *req, const char *text,
                json_t *written, json_t *spans)
{
	json_t *l = line(text);
	trace_stamp(r, req, "acme", l);
	json_array_append(written, l);
	trace_line_spans(r, l, spans);
	json_decref(l);
}

START_TEST(journal_as_spans)
{
	struct trace_root r = { 0 };
	json_t *written = json_array(), *spans = json_array();
	run(&r, NULL,
	    "{\"seq\":1,\"ts\":\"2026-12-04T10:00:00.000Z\",\"sandbox\":\"sb1\",\"type\":"
	    "\"lifecycle\","
	    "\"event\":\"created\",\"reason\":\"requested\",\"templateID\":\"base\",\"start\":"
	    "\"restore\"}",
	    written, spans);
	ck_assert(r.stamped);
	char root[TRACE_SPAN_HEX], trace[TRACE_ID_HEX];
	trace_hex(r.span_id, TRACE_SPAN_LEN, root);
	trace_hex(r.trace_id, TRACE_ID_LEN, trace);
	ck_assert(!r.has_parent); /* no caller: a trace of its own */
	run(&r, NULL,
	    "{\"seq\":2,\"ts\":\"2026-12-04T10:00:01.500Z\",\"sandbox\":\"sb1\",\"type\":\"exec\","
	    "\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"exit 3\"],\"cwd\":\"/root\",\"user\":\"root\","
	    "\"duration_ms\":500,\"exit_code\":3,\"stdout_bytes\":0,\"stderr_bytes\":4}",
	    written, spans);
	struct trace_ctx caller;
	ck_assert_int_eq(trace_parse_parent(TP, strlen(TP), &caller), 0);
	run(&r, &caller,
	    "{\"seq\":3,\"ts\":\"2026-12-04T10:00:02.000Z\",\"sandbox\":\"sb1\",\"type\":\"file\","
	    "\"op\":\"write\",\"path\":\"/root/a.txt\",\"bytes\":5,\"duration_ms\":2}",
	    written, spans);
	run(&r, NULL,
	    "{\"seq\":4,\"ts\":\"2026-12-04T10:00:03.000Z\",\"sandbox\":\"sb1\",\"type\":"
	    "\"egress\","
	    "\"egress\":{\"time\":\"2026-12-04T10:00:02.900Z\",\"proto\":\"tcp\",\"dst\":\"1.2.3."
	    "4\","
	    "\"port\":443,\"name\":\"evil.example\",\"rule\":null,\"verdict\":\"deny\"}}",
	    written, spans);
	run(&r, NULL,
	    "{\"seq\":5,\"ts\":\"2026-12-04T10:00:03.100Z\",\"sandbox\":\"sb1\",\"type\":"
	    "\"egress\","
	    "\"egress\":{\"time\":\"2026-12-04T10:00:03.000Z\",\"proto\":\"tcp\",\"dst\":\"5.6.7."
	    "8\","
	    "\"port\":443,\"name\":\"api.example\",\"rule\":\"api.example\",\"verdict\":\"allow\","
	    "\"proxy_rule\":\"openai\",\"headers\":\"[redacted]\"}}",
	    written, spans);
	ck_assert_uint_eq(json_array_size(spans), 3); /* egress lines are events, not spans */
	run(&r, NULL,
	    "{\"seq\":6,\"ts\":\"2026-12-04T10:00:04.000Z\",\"sandbox\":\"sb1\",\"type\":"
	    "\"lifecycle\","
	    "\"event\":\"killed\",\"reason\":\"requested\"}",
	    written, spans);
	ck_assert_uint_eq(json_array_size(spans), 5); /* the kill and the sandbox's span */
	ck_assert(!r.set && !r.stamped);              /* ended */

	size_t i;
	json_t *s;
	json_array_foreach(spans, i, s)
	{
		check_ids(s);
		ck_assert_str_eq(attr(s, "cove.tenant", "stringValue"), "acme");
		ck_assert_str_eq(attr(s, "cove.sandbox_id", "stringValue"), "sb1");
	}
	json_t *create = json_array_get(spans, 0), *exec = json_array_get(spans, 1),
	       *file = json_array_get(spans, 2), *kill = json_array_get(spans, 3),
	       *sbx = json_array_get(spans, 4);
	ck_assert_str_eq(json_string_value(json_object_get(create, "name")), "sandbox.create");
	ck_assert_str_eq(attr(create, "cove.start", "stringValue"), "restore");
	ck_assert_str_eq(json_string_value(json_object_get(create, "parentSpanId")), root);
	ck_assert_str_eq(json_string_value(json_object_get(exec, "name")), "process.exec");
	ck_assert_str_eq(attr(exec, "process.command_line", "stringValue"), "/bin/sh -c exit 3");
	ck_assert_str_eq(attr(exec, "process.exit_code", "intValue"), "3");
	ck_assert_str_eq(attr(exec, "cove.process.stderr_bytes", "intValue"), "4");
	ck_assert_str_eq(json_string_value(json_object_get(exec, "startTimeUnixNano")),
	                 "1796378401000000000");
	ck_assert_str_eq(json_string_value(json_object_get(exec, "endTimeUnixNano")),
	                 "1796378401500000000");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_object_get(exec, "status"), "code")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(exec, "traceId")), trace);
	/* The caller's request: its trace, under its span. */
	ck_assert_str_eq(json_string_value(json_object_get(file, "name")), "file.write");
	ck_assert_str_eq(attr(file, "file.path", "stringValue"), "/root/a.txt");
	ck_assert_str_eq(json_string_value(json_object_get(file, "traceId")),
	                 "4bf92f3577b34da6a3ce929d0e0e4736");
	ck_assert_str_eq(json_string_value(json_object_get(file, "parentSpanId")),
	                 "00f067aa0ba902b7");
	ck_assert_str_eq(json_string_value(json_object_get(kill, "name")), "sandbox.kill");
	ck_assert_str_eq(json_string_value(json_object_get(sbx, "name")), "sandbox");
	ck_assert_str_eq(json_string_value(json_object_get(sbx, "spanId")), root);
	ck_assert_ptr_null(json_object_get(sbx, "parentSpanId"));
	ck_assert_str_eq(json_string_value(json_object_get(sbx, "startTimeUnixNano")),
	                 "1796378400000000000");
	json_t *ev = json_object_get(sbx, "events");
	ck_assert_uint_eq(json_array_size(ev), 2);
	json_t *deny = json_array_get(ev, 0), *inj = json_array_get(ev, 1);
	ck_assert_str_eq(json_string_value(json_object_get(deny, "name")), "egress.deny");
	ck_assert_str_eq(attr(deny, "server.address", "stringValue"), "evil.example");
	ck_assert_str_eq(attr(deny, "server.port", "intValue"), "443");
	ck_assert_str_eq(json_string_value(json_object_get(inj, "name")), "credential.inject");
	ck_assert_str_eq(attr(inj, "cove.proxy.rule", "stringValue"), "openai");
	char *all = json_dumps(spans, 0);
	ck_assert_ptr_null(strstr(all, "redacted")); /* nothing of the headers */
	free(all);

	/* The written lines replayed: the same spans. */
	struct trace_root again = { 0 };
	json_t *replay = json_array();
	json_t *l;
	json_array_foreach(written, i, l) trace_line_spans(&again, l, replay);
	ck_assert(json_equal(replay, spans));
	json_decref(replay);
	json_decref(written);
	json_decref(spans);
	trace_root_fini(&r);
	trace_root_fini(&again);
}
END_TEST

START_TEST(caller_creates)
{
	/* A create under a caller's span: the sandbox's span is its child. */
	struct trace_ctx caller;
	ck_assert_int_eq(trace_parse_parent(TP, strlen(TP), &caller), 0);
	struct trace_root r = { 0 };
	json_t *l = line("{\"seq\":1,\"ts\":\"2026-12-04T10:00:00.000Z\",\"sandbox\":\"sb2\","
	                 "\"type\":\"lifecycle\",\"event\":\"created\"}");
	trace_stamp(&r, &caller, "acme", l);
	ck_assert_str_eq(json_string_value(json_object_get(l, "trace_id")),
	                 "4bf92f3577b34da6a3ce929d0e0e4736");
	ck_assert_str_eq(json_string_value(json_object_get(l, "sandbox_parent_span_id")),
	                 "00f067aa0ba902b7");
	ck_assert_str_eq(json_string_value(json_object_get(l, "tenant")), "acme");
	/* Loaded back (a restart), the same span. */
	struct trace_root back = { 0 };
	ck_assert_int_eq(trace_root_load(&back, l), 0);
	ck_assert(!memcmp(back.span_id, r.span_id, TRACE_SPAN_LEN));
	ck_assert(back.has_parent);
	/* A line without ids (a journal from before traces) makes no span. */
	json_t *spans = json_array();
	json_t *old = line("{\"seq\":2,\"ts\":\"2026-12-04T10:00:00.000Z\",\"type\":\"exec\"}");
	ck_assert_int_eq(trace_line_spans(&back, old, spans), 0);
	json_decref(old);
	json_decref(spans);
	json_decref(l);
	trace_root_fini(&r);
	trace_root_fini(&back);
	int64_t ms;
	ck_assert_int_eq(trace_time_ms("2026-12-04T10:00:00.123Z", &ms), 0);
	ck_assert_int_eq(ms, 1796378400123);
	ck_assert_int_eq(trace_time_ms("2026-12-04T10:00:00Z", &ms), -1);
	ck_assert_int_eq(trace_time_ms("2026-13-04T10:00:00.000Z", &ms), -1);
}
END_TEST

/* ---- the exporter --------------------------------------------------------------- */

struct receiver {
	int fd;
	bool answer; /* false: take the connection and never answer */
	char body[65536];
	size_t len;
};

static void *receive(void *arg)
{
	struct receiver *rv = arg;
	int c = accept(rv->fd, NULL, NULL);
	if (c < 0)
		return NULL;
	if (!rv->answer) {
		sleep(3);
		close(c);
		return NULL;
	}
	char buf[65536 + 4096];
	size_t n = 0;
	ssize_t k;
	char *hdr_end = NULL;
	size_t want = 0;
	while ((k = read(c, buf + n, sizeof(buf) - 1 - n)) > 0) {
		n += (size_t)k;
		buf[n] = 0;
		if (!hdr_end && (hdr_end = strstr(buf, "\r\n\r\n"))) {
			char *cl = strcasestr(buf, "Content-Length:");
			want = (size_t)(hdr_end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
		}
		if (hdr_end && n >= want)
			break;
	}
	if (hdr_end) {
		rv->len = n - (size_t)(hdr_end + 4 - buf);
		memcpy(rv->body, hdr_end + 4, rv->len);
	}
	const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
	ck_assert_int_eq(write(c, ok, sizeof(ok) - 1), (ssize_t)sizeof(ok) - 1);
	close(c);
	return NULL;
}

static int listener(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	socklen_t len = sizeof(a);
	getsockname(fd, (struct sockaddr *)&a, &len);
	*port = ntohs(a.sin_port);
	return fd;
}

static json_t *span_named(const char *name)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s}", "traceId", "4bf92f3577b34da6a3ce929d0e0e4736",
	                 "spanId", "00f067aa0ba902b7", "name", name, "startTimeUnixNano", "1",
	                 "endTimeUnixNano", "2");
}

START_TEST(exporter_sends)
{
	struct receiver rv = { .answer = true };
	int port;
	rv.fd = listener(&port);
	pthread_t th;
	pthread_create(&th, NULL, receive, &rv);
	char url[64], err[200];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/traces", port);
	struct trace_headers h;
	ck_assert_int_eq(trace_parse_headers("x-key=v", 7, &h, err, sizeof(err)), 0);
	struct otlp_config cfg = { .url = url, .service = "svc", .headers = &h, .interval_ms = 50 };
	struct otlp *e = otlp_start(&cfg, err, sizeof(err));
	ck_assert_ptr_nonnull(e);
	ck_assert(otlp_enqueue(e, span_named("a")));
	ck_assert(otlp_enqueue(e, span_named("b")));
	pthread_join(th, NULL);
	otlp_stop(e); /* counts are read before; the receiver took one batch */
	rv.body[rv.len] = 0;
	json_t *env = json_loads(rv.body, 0, NULL);
	ck_assert_msg(env != NULL, "body: %s", rv.body);
	json_t *rs = json_array_get(json_object_get(env, "resourceSpans"), 0);
	json_t *spans =
	    json_object_get(json_array_get(json_object_get(rs, "scopeSpans"), 0), "spans");
	ck_assert_uint_eq(json_array_size(spans), 2);
	ck_assert_str_eq(attr(json_object_get(rs, "resource"), "service.name", "stringValue"),
	                 "svc");
	json_decref(env);
	trace_headers_free(&h);
	close(rv.fd);
}
END_TEST

START_TEST(exporter_drops)
{
	/* A collector that takes the connection and never answers: the queue
	 * of 4 fills, the rest is dropped and counted, and enqueue returns. */
	struct receiver rv = { .answer = false };
	int port;
	rv.fd = listener(&port);
	pthread_t th;
	pthread_create(&th, NULL, receive, &rv);
	char url[64], err[200];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/traces", port);
	struct otlp_config cfg = {
		.url = url, .queue_max = 4, .batch_max = 2, .interval_ms = 10, .timeout_ms = 500
	};
	struct otlp *e = otlp_start(&cfg, err, sizeof(err));
	ck_assert_ptr_nonnull(e);
	int taken = 0;
	for (int i = 0; i < 50; i++)
		taken += otlp_enqueue(e, span_named("x"));
	ck_assert_int_le(taken, 6); /* the queue, and one batch taken out of it */
	struct otlp_counts c;
	otlp_counts(e, &c);
	ck_assert_uint_ge(c.dropped, 44);
	otlp_stop(e);
	pthread_join(th, NULL);
	close(rv.fd);
}
END_TEST

START_TEST(export_public_only)
{
	/* An API caller's URL (public_only) may not reach the host itself. */
	int port;
	int fd = listener(&port);
	char url[64], err[200];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/traces", port);
	json_t *spans = json_array();
	json_array_append_new(spans, span_named("x"));
	ck_assert_int_eq(otlp_post(url, "svc", NULL, spans, 2000, true, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "127.0.0.1 is a private or host address"), "%s", err);
	close(fd);
}
END_TEST

START_TEST(settings_from_env)
{
	struct coved_config cfg = { 0 };
	struct tracer_settings s;
	char err[200];
	unsetenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
	unsetenv("OTEL_SERVICE_NAME");
	unsetenv("OTEL_TRACES_SAMPLER");
	ck_assert_int_eq(tracer_settings(&cfg, &s, err, sizeof(err)), 0);
	ck_assert_ptr_null(s.url); /* off */
	tracer_settings_free(&s);
	/* Off: no tracer, no error, and nothing kept (LeakSanitizer checks). */
	ck_assert_ptr_null(tracer_start(&cfg, err, sizeof(err)));
	ck_assert_str_eq(err, "");
	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/", 1);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0ps3cret", 1);
	ck_assert_int_eq(tracer_settings(&cfg, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.url, "http://collector:4318/v1/traces");
	ck_assert_str_eq(s.service, "coved");
	ck_assert_str_eq(s.headers.line[0], "authorization: Bearer t0ps3cret");
	tracer_settings_free(&s);
	setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://other:1/traces", 1);
	ck_assert_int_eq(tracer_settings(&cfg, &s, err, sizeof(err)), 0);
	ck_assert_str_eq(s.url, "http://other:1/traces");
	tracer_settings_free(&s);
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "bad key=t0ps3cret", 1);
	ck_assert_int_eq(tracer_settings(&cfg, &s, err, sizeof(err)), -1);
	ck_assert_ptr_null(strstr(err, "t0ps3cret"));
	setenv("OTEL_EXPORTER_OTLP_HEADERS", "", 1);
	setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://x/", 1);
	ck_assert_int_eq(tracer_settings(&cfg, &s, err, sizeof(err)), -1);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, traceparent_strict);
	tcase_add_test(tc, tracestate_and_headers);
	tcase_add_test(tc, samplers);
	tcase_add_test(tc, journal_as_spans);
	tcase_add_test(tc, caller_creates);
	tcase_add_test(tc, exporter_sends);
	tcase_add_test(tc, exporter_drops);
	tcase_add_test(tc, export_public_only);
	tcase_add_test(tc, settings_from_env);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
