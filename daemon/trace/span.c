/* Journal lines as OTLP spans (span.h).  Attribute names follow
 * OpenTelemetry's semantic conventions where one exists (process.*,
 * file.path, server.*), cove.* where none does; docs/tracing.md lists
 * them. */
#include "daemon/trace/span.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SPAN_KIND_INTERNAL 1
#define STATUS_ERROR       2
#define CMDLINE_MAX        4096 /* process.command_line is cut here */

void trace_root_fini(struct trace_root *r)
{
	free(r->template_id);
	json_decref(r->events);
	memset(r, 0, sizeof(*r));
}

int trace_time_ms(const char *s, int64_t *ms)
{
	/* What coved and cove-egress write: 2026-12-03T11:33:20.123Z */
	unsigned y, mo, d, h, mi, se, f;
	char z;
	int n = 0;
	if (!s || strlen(s) != 24 ||
	    sscanf(s, "%4u-%2u-%2uT%2u:%2u:%2u.%3u%c%n", &y, &mo, &d, &h, &mi, &se, &f, &z, &n) !=
	        8 ||
	    n != 24 || z != 'Z' || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || se > 60)
		return -1;
	struct tm tm = { .tm_year = (int)y - 1900,
		         .tm_mon = (int)mo - 1,
		         .tm_mday = (int)d,
		         .tm_hour = (int)h,
		         .tm_min = (int)mi,
		         .tm_sec = (int)se };
	time_t t = timegm(&tm);
	if (t < 0)
		return -1;
	*ms = (int64_t)t * 1000 + f;
	return 0;
}

static json_t *ns_string(int64_t ms)
{
	char b[32];
	snprintf(b, sizeof(b), "%" PRId64 "000000", ms < 0 ? 0 : ms);
	return json_string(ms <= 0 ? "0" : b);
}

/* ---- attributes ------------------------------------------------------------- */

static void attr(json_t *a, const char *key, json_t *value)
{
	if (value)
		json_array_append_new(a, json_pack("{s:s, s:o}", "key", key, "value", value));
}

static void attr_str(json_t *a, const char *key, const char *v)
{
	if (v)
		attr(a, key, json_pack("{s:s}", "stringValue", v));
}

/* OTLP JSON writes 64-bit integers as strings. */
static void attr_int(json_t *a, const char *key, json_int_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "%" JSON_INTEGER_FORMAT, v);
	attr(a, key, json_pack("{s:s}", "intValue", b));
}

static void attr_bool(json_t *a, const char *key, bool v)
{
	attr(a, key, json_pack("{s:b}", "boolValue", v));
}

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void copy_str(json_t *a, const char *key, json_t *o, const char *field)
{
	attr_str(a, key, str(o, field));
}

static void copy_int(json_t *a, const char *key, json_t *o, const char *field)
{
	json_t *v = json_object_get(o, field);
	if (json_is_integer(v))
		attr_int(a, key, json_integer_value(v));
}

/* ---- stamping ----------------------------------------------------------------- */

static void set_hex(json_t *line, const char *key, const uint8_t *b, size_t n)
{
	char h[TRACE_ID_HEX];
	trace_hex(b, n, h);
	json_object_set_new(line, key, json_string(h));
}

static int get_hex(json_t *line, const char *key, uint8_t *b, size_t n);

static bool is_event(json_t *line, const char *ev)
{
	const char *t = str(line, "type"), *e = str(line, "event");
	return t && e && !strcmp(t, "lifecycle") && !strcmp(e, ev);
}

void trace_stamp(struct trace_root *r, const struct trace_ctx *req, const char *tenant,
                 json_t *line)
{
	if (!json_is_object(line))
		return;
	if (req && !req->set)
		req = NULL;
	/* A line begun while a request was served and ended later (an exec's)
	 * carries that request's context already (trace_req_mark). */
	struct trace_ctx early = { 0 };
	if (get_hex(line, "trace_id", early.trace_id, TRACE_ID_LEN) == 0 &&
	    get_hex(line, "parent_span_id", early.span_id, TRACE_SPAN_LEN) == 0) {
		early.set = true;
		req = &early;
	}
	bool created = is_event(line, "created") && !r->stamped;
	if (created) {
		if (req) {
			memcpy(r->trace_id, req->trace_id, TRACE_ID_LEN);
			memcpy(r->parent, req->span_id, TRACE_SPAN_LEN);
			r->has_parent = true;
		} else {
			trace_new_id(r->trace_id);
			r->has_parent = false;
		}
		trace_new_span(r->span_id);
		snprintf(r->tenant, sizeof(r->tenant), "%s", tenant ? tenant : "");
		r->stamped = true;
	}
	if (!r->stamped)
		return; /* a journal begun before traces: its lines stay as they were */
	const char *type = str(line, "type");
	if (type && !strcmp(type, "egress")) {
		set_hex(line, "trace_id", r->trace_id, TRACE_ID_LEN);
		set_hex(line, "span_id", r->span_id, TRACE_SPAN_LEN);
		return;
	}
	uint8_t span[TRACE_SPAN_LEN];
	trace_new_span(span);
	set_hex(line, "trace_id", req ? req->trace_id : r->trace_id, TRACE_ID_LEN);
	set_hex(line, "span_id", span, TRACE_SPAN_LEN);
	set_hex(line, "parent_span_id", req ? req->span_id : r->span_id, TRACE_SPAN_LEN);
	if (created) {
		set_hex(line, "sandbox_span_id", r->span_id, TRACE_SPAN_LEN);
		if (r->has_parent)
			set_hex(line, "sandbox_parent_span_id", r->parent, TRACE_SPAN_LEN);
		json_object_set_new(line, "tenant", json_string(r->tenant));
	}
}

/* Reads hex field @key of @line into @b: 0 or -1. */
static int get_hex(json_t *line, const char *key, uint8_t *b, size_t n)
{
	json_t *v = json_object_get(line, key);
	return json_is_string(v) &&
	               trace_unhex(json_string_value(v), json_string_length(v), b, n) == 0 &&
	               !trace_zero(b, n)
	           ? 0
	           : -1;
}

static int root_begin(struct trace_root *r, json_t *line)
{
	struct trace_root n = { 0 };
	int64_t ms;
	if (get_hex(line, "trace_id", n.trace_id, TRACE_ID_LEN) < 0 ||
	    get_hex(line, "sandbox_span_id", n.span_id, TRACE_SPAN_LEN) < 0 ||
	    trace_time_ms(str(line, "ts"), &ms) < 0)
		return -1;
	n.has_parent = get_hex(line, "sandbox_parent_span_id", n.parent, TRACE_SPAN_LEN) == 0;
	snprintf(n.tenant, sizeof(n.tenant), "%s", str(line, "tenant") ? str(line, "tenant") : "");
	snprintf(n.sandbox, sizeof(n.sandbox), "%s",
	         str(line, "sandbox") ? str(line, "sandbox") : "");
	const char *tpl = str(line, "templateID");
	n.template_id = tpl ? strdup(tpl) : NULL;
	n.start_ms = ms;
	n.set = n.stamped = true;
	trace_root_fini(r);
	*r = n;
	return 0;
}

int trace_root_load(struct trace_root *r, json_t *line)
{
	return is_event(line, "created") ? root_begin(r, line) : -1;
}

/* ---- spans -------------------------------------------------------------------- */

static json_t *new_span(const char *name, json_t *line, int64_t start_ms, int64_t end_ms)
{
	json_t *s =
	    json_pack("{s:O, s:O, s:s, s:i, s:o, s:o, s:[]}", "traceId",
	              json_object_get(line, "trace_id"), "spanId", json_object_get(line, "span_id"),
	              "name", name, "kind", SPAN_KIND_INTERNAL, "startTimeUnixNano",
	              ns_string(start_ms), "endTimeUnixNano", ns_string(end_ms), "attributes");
	json_t *p = json_object_get(line, "parent_span_id");
	if (s && json_is_string(p))
		json_object_set(s, "parentSpanId", p);
	return s;
}

static void set_error(json_t *span, const char *msg)
{
	json_object_set_new(span, "status",
	                    json_pack("{s:i, s:s}", "code", STATUS_ERROR, "message", msg));
}

/* The span's common attributes: every span names its tenant and sandbox. */
static void common_attrs(struct trace_root *r, json_t *a, json_t *line)
{
	attr_str(a, "cove.tenant", r->tenant);
	attr_str(a, "cove.sandbox_id", str(line, "sandbox") ? str(line, "sandbox") : r->sandbox);
	copy_int(a, "cove.journal.seq", line, "seq");
}

static void exec_attrs(json_t *span, json_t *a, json_t *line)
{
	char cmd[CMDLINE_MAX + 1];
	size_t n =
	    (size_t)snprintf(cmd, sizeof(cmd), "%s", str(line, "cmd") ? str(line, "cmd") : "");
	size_t i;
	json_t *arg;
	json_array_foreach(json_object_get(line, "args"), i, arg)
	{
		if (n >= CMDLINE_MAX || !json_is_string(arg))
			break;
		n += (size_t)snprintf(cmd + n, sizeof(cmd) - n, " %s", json_string_value(arg));
	}
	attr_str(a, "process.command_line", cmd);
	copy_str(a, "process.working_directory", line, "cwd");
	copy_str(a, "process.user.name", line, "user");
	copy_int(a, "process.pid", line, "pid");
	copy_int(a, "process.exit_code", line, "exit_code");
	copy_int(a, "cove.process.signal", line, "signal");
	copy_int(a, "cove.process.stdout_bytes", line, "stdout_bytes");
	copy_int(a, "cove.process.stderr_bytes", line, "stderr_bytes");
	copy_str(a, "cove.process.tag", line, "tag");
	if (json_is_true(json_object_get(line, "detached")))
		attr_bool(a, "cove.process.detached", true);
	json_t *ec = json_object_get(line, "exit_code");
	if (json_is_integer(json_object_get(line, "signal")))
		set_error(span, "ended by a signal");
	else if (json_is_integer(ec) && json_integer_value(ec) != 0)
		set_error(span, "exit code not 0");
}

static void file_attrs(json_t *span, json_t *a, json_t *line)
{
	copy_str(a, "file.path", line, "path");
	copy_str(a, "cove.file.op", line, "op");
	copy_int(a, "cove.file.bytes", line, "bytes");
	copy_str(a, "cove.file.user", line, "user");
	copy_int(a, "cove.file.errno", line, "errno");
	if (json_is_integer(json_object_get(line, "errno")))
		set_error(span, "the file operation failed");
}

/* "created" -> "sandbox.create" and so on; other events keep their name. */
static void lifecycle_name(const char *ev, char *out, size_t len)
{
	static const char *const map[][2] = {
		{ "created", "create" },       { "paused", "pause" }, { "resumed", "resume" },
		{ "snapshotted", "snapshot" }, { "forked", "fork" },  { "killed", "kill" },
		{ "timed_out", "timeout" },    { "dead", "death" },   { "stopped", "stop" },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(ev, map[i][0])) {
			snprintf(out, len, "sandbox.%s", map[i][1]);
			return;
		}
	snprintf(out, len, "sandbox.%.40s", ev);
}

static void lifecycle_attrs(json_t *a, json_t *line)
{
	copy_str(a, "cove.event", line, "event");
	copy_str(a, "cove.reason", line, "reason");
	copy_str(a, "cove.template_id", line, "templateID");
	copy_str(a, "cove.start", line, "start");
	copy_str(a, "cove.snapshot_id", line, "snapshotID");
	copy_str(a, "cove.action", line, "action");
	copy_int(a, "cove.timeout_s", line, "timeout");
	json_t *w = json_object_get(line, "warm");
	if (json_is_boolean(w))
		attr_bool(a, "cove.warm", json_is_true(w));
}

/* An egress line {"type": "egress", "egress": {decision}} as an event of
 * the sandbox's span; a credential injection names its rule (never the
 * headers it wrote). */
static void egress_event(struct trace_root *r, json_t *line)
{
	json_t *e = json_object_get(line, "egress");
	int64_t ms;
	if (!json_is_object(e) || trace_time_ms(str(e, "time"), &ms) < 0)
		return;
	if (!r->events)
		r->events = json_array();
	if (!r->events)
		return;
	if (json_array_size(r->events) >= TRACE_EVENTS_MAX) {
		r->dropped_events++;
		return;
	}
	const char *verdict = str(e, "verdict"), *inject = str(e, "proxy_rule");
	json_t *a = json_array();
	attr_str(a, "server.address", str(e, "name") ? str(e, "name") : str(e, "dst"));
	copy_str(a, "cove.egress.ip", e, "dst");
	copy_int(a, "server.port", e, "port");
	copy_str(a, "cove.egress.rule", e, "rule");
	copy_str(a, "cove.egress.verdict", e, "verdict");
	copy_str(a, "cove.egress.proto", e, "proto");
	copy_str(a, "cove.egress.via", e, "via");
	copy_int(a, "cove.egress.bytes", e, "bytes");
	copy_str(a, "cove.proxy.rule", e, "proxy_rule");
	const char *name = inject                                ? "credential.inject"
	                   : verdict && !strcmp(verdict, "deny") ? "egress.deny"
	                                                         : "egress.allow";
	json_array_append_new(r->events, json_pack("{s:o, s:s, s:o}", "timeUnixNano", ns_string(ms),
	                                           "name", name, "attributes", a));
}

static json_t *root_span(struct trace_root *r, json_t *line, int64_t end_ms)
{
	char t[TRACE_ID_HEX], s[TRACE_SPAN_HEX], p[TRACE_SPAN_HEX];
	trace_hex(r->trace_id, TRACE_ID_LEN, t);
	trace_hex(r->span_id, TRACE_SPAN_LEN, s);
	trace_hex(r->parent, TRACE_SPAN_LEN, p);
	json_t *span =
	    json_pack("{s:s, s:s, s:s, s:i, s:o, s:o, s:[], s:i}", "traceId", t, "spanId", s,
	              "name", "sandbox", "kind", SPAN_KIND_INTERNAL, "startTimeUnixNano",
	              ns_string(r->start_ms), "endTimeUnixNano", ns_string(end_ms), "attributes",
	              "droppedEventsCount", (int)r->dropped_events);
	if (!span)
		return NULL;
	if (r->has_parent)
		json_object_set_new(span, "parentSpanId", json_string(p));
	json_object_set_new(span, "events", r->events ? json_incref(r->events) : json_array());
	json_t *a = json_object_get(span, "attributes");
	attr_str(a, "cove.tenant", r->tenant);
	attr_str(a, "cove.sandbox_id", r->sandbox);
	attr_str(a, "cove.template_id", r->template_id);
	copy_str(a, "cove.end", line, "event");
	copy_str(a, "cove.end_reason", line, "reason");
	if (is_event(line, "dead"))
		set_error(span, "the sandbox died");
	return span;
}

int trace_line_spans(struct trace_root *r, json_t *line, json_t *out)
{
	if (!json_is_object(line) || !json_is_array(out))
		return 0;
	const char *type = str(line, "type");
	if (!type)
		return 0;
	if (is_event(line, "created") && !r->set && root_begin(r, line) < 0)
		return 0;
	if (!r->set)
		return 0;
	if (!strcmp(type, "egress")) {
		egress_event(r, line);
		return 0;
	}
	int64_t end, start;
	uint8_t b[TRACE_ID_LEN];
	if (get_hex(line, "trace_id", b, TRACE_ID_LEN) < 0 ||
	    get_hex(line, "span_id", b, TRACE_SPAN_LEN) < 0 ||
	    trace_time_ms(str(line, "ts"), &end) < 0)
		return 0;
	start = end;
	json_t *dur = json_object_get(line, "duration_ms");
	if (json_is_integer(dur) && json_integer_value(dur) >= 0 && json_integer_value(dur) < end)
		start = end - json_integer_value(dur);
	int64_t st;
	if (trace_time_ms(str(line, "start"), &st) == 0 && st <= end)
		start = st;
	char name[64];
	if (!strcmp(type, "exec"))
		snprintf(name, sizeof(name), "process.exec");
	else if (!strcmp(type, "file"))
		snprintf(name, sizeof(name), "file.%.20s",
		         str(line, "op") ? str(line, "op") : "op");
	else if (!strcmp(type, "lifecycle") && str(line, "event"))
		lifecycle_name(str(line, "event"), name, sizeof(name));
	else
		snprintf(name, sizeof(name), "cove.%.40s", type);
	json_t *span = new_span(name, line, start, end);
	if (!span)
		return 0;
	json_t *a = json_object_get(span, "attributes");
	common_attrs(r, a, line);
	if (!strcmp(type, "exec"))
		exec_attrs(span, a, line);
	else if (!strcmp(type, "file"))
		file_attrs(span, a, line);
	else if (!strcmp(type, "lifecycle"))
		lifecycle_attrs(a, line);
	json_array_append_new(out, span);
	int n = 1;
	if (is_event(line, "killed") || is_event(line, "dead")) {
		json_t *rs = root_span(r, line, end);
		if (rs) {
			json_array_append_new(out, rs);
			n++;
		}
		trace_root_fini(r);
	}
	return n;
}

json_t *trace_envelope(const char *service, json_t *spans)
{
	return json_pack("{s:[{s:{s:[{s:s, s:{s:s}}]}, s:[{s:{s:s}, s:o}]}]}", "resourceSpans",
	                 "resource", "attributes", "key", "service.name", "value", "stringValue",
	                 service ? service : "coved", "scopeSpans", "scope", "name", "coved",
	                 "spans", spans);
}
