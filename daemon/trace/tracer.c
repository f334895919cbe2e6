/* coved's tracer (tracer.h). */
#include "daemon/trace/tracer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/base/jchain.h"

#define EXPORT_BATCH 512

struct tracer {
	struct tracer_settings s;
	struct otlp *exp;
};

static const char *pick(const char *env, const char *conf)
{
	const char *v = getenv(env);
	return v && *v ? v : conf;
}

int tracer_settings(const struct coved_config *cfg, struct tracer_settings *out, char *err,
                    size_t errlen)
{
	memset(out, 0, sizeof(*out));
	const char *traces = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
	const char *base = pick("OTEL_EXPORTER_OTLP_ENDPOINT", cfg ? cfg->otlp_endpoint : NULL);
	if (traces && *traces) {
		out->url = strdup(traces);
	} else if (base && *base) {
		size_t n = strlen(base);
		while (n && base[n - 1] == '/')
			n--;
		if (asprintf(&out->url, "%.*s/v1/traces", (int)n, base) < 0)
			out->url = NULL;
	}
	const char *u = out->url;
	if (u && strncmp(u, "http://", 7) && strncmp(u, "https://", 8)) {
		snprintf(err, errlen, "the OTLP endpoint must be an http:// or https:// URL");
		goto fail;
	}
	const char *svc = pick("OTEL_SERVICE_NAME", cfg ? cfg->otlp_service_name : NULL);
	out->service = strdup(svc && *svc ? svc : "coved");
	const char *h = pick("OTEL_EXPORTER_OTLP_HEADERS", cfg ? cfg->otlp_headers : NULL);
	if (h && trace_parse_headers(h, strlen(h), &out->headers, err, errlen) < 0)
		goto fail;
	if (trace_parse_sampler(pick("OTEL_TRACES_SAMPLER", cfg ? cfg->otlp_sampler : NULL),
	                        getenv("OTEL_TRACES_SAMPLER_ARG"), &out->sampler, err, errlen) < 0)
		goto fail;
	if (!out->service) {
		snprintf(err, errlen, "traces: out of memory");
		goto fail;
	}
	return 0;
fail:
	tracer_settings_free(out);
	return -1;
}

void tracer_settings_free(struct tracer_settings *s)
{
	free(s->url);
	free(s->service);
	trace_headers_free(&s->headers);
	memset(s, 0, sizeof(*s));
}

struct tracer *tracer_start(const struct coved_config *cfg, char *err, size_t errlen)
{
	if (errlen)
		err[0] = 0;
	struct tracer *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "traces: out of memory");
		return NULL;
	}
	if (tracer_settings(cfg, &t->s, err, errlen) < 0) {
		free(t);
		return NULL;
	}
	if (!t->s.url) { /* off */
		tracer_settings_free(&t->s);
		free(t);
		return NULL;
	}
	struct otlp_config oc = { .url = t->s.url,
		                  .service = t->s.service,
		                  .headers = &t->s.headers };
	t->exp = otlp_start(&oc, err, errlen);
	if (!t->exp) {
		tracer_settings_free(&t->s);
		free(t);
		return NULL;
	}
	return t;
}

void tracer_stop(struct tracer *t)
{
	if (!t)
		return;
	otlp_stop(t->exp);
	tracer_settings_free(&t->s);
	free(t);
}

void tracer_line(struct tracer *t, struct trace_root *r, json_t *line)
{
	if (!t)
		return; /* off: no span is built, no event kept */
	json_t *spans = json_array();
	if (!spans)
		return;
	trace_line_spans(r, line, spans);
	size_t i;
	json_t *s;
	json_array_foreach(spans, i, s)
	{
		uint8_t id[TRACE_ID_LEN];
		json_t *tid = json_object_get(s, "traceId");
		if (trace_unhex(json_string_value(tid), json_string_length(tid), id, TRACE_ID_LEN) <
		    0)
			continue;
		if (trace_sampled(&t->s.sampler, NULL, id))
			otlp_enqueue(t->exp, json_incref(s));
	}
	json_decref(spans);
}

void tracer_metrics(struct tracer *t, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = 0;
	if (!t)
		return;
	struct otlp_counts c;
	otlp_counts(t->exp, &c);
	snprintf(buf, len,
	         "# HELP coved_trace_spans_exported_total Spans the collector took.\n"
	         "# TYPE coved_trace_spans_exported_total counter\n"
	         "coved_trace_spans_exported_total %" PRIu64 "\n"
	         "# HELP coved_trace_spans_dropped_total Spans dropped: the queue full or "
	         "their export failed.\n"
	         "# TYPE coved_trace_spans_dropped_total counter\n"
	         "coved_trace_spans_dropped_total %" PRIu64 "\n"
	         "# HELP coved_trace_export_errors_total Exports that failed.\n"
	         "# TYPE coved_trace_export_errors_total counter\n"
	         "coved_trace_export_errors_total %" PRIu64 "\n"
	         "# HELP coved_trace_spans_queued Spans waiting for export.\n"
	         "# TYPE coved_trace_spans_queued gauge\n"
	         "coved_trace_spans_queued %" PRIu64 "\n",
	         c.exported, c.dropped, c.errors, c.queued);
}

/* ---- the request's context ---------------------------------------------------- */

static __thread struct trace_req cur;

void trace_req_begin(const char *traceparent, const char *tracestate, const char *tenant)
{
	(void)tracestate; /* passed on by no one yet: coved makes no outgoing calls in a trace */
	memset(&cur, 0, sizeof(cur));
	if (traceparent)
		trace_parse_parent(traceparent, strlen(traceparent), &cur.ctx);
	snprintf(cur.tenant, sizeof(cur.tenant), "%s", tenant ? tenant : "");
}

void trace_req_end(void)
{
	memset(&cur, 0, sizeof(cur));
}

void trace_req_mark(json_t *line, const char *tenant)
{
	const struct trace_ctx *c = trace_req_for(tenant);
	if (!c || !json_is_object(line))
		return;
	char t[TRACE_ID_HEX], s[TRACE_SPAN_HEX];
	trace_hex(c->trace_id, TRACE_ID_LEN, t);
	trace_hex(c->span_id, TRACE_SPAN_LEN, s);
	json_object_set_new(line, "trace_id", json_string(t));
	json_object_set_new(line, "parent_span_id", json_string(s));
}

const struct trace_ctx *trace_req_for(const char *tenant)
{
	if (!cur.ctx.set)
		return NULL;
	if (cur.tenant[0] && (!tenant || strcmp(cur.tenant, tenant)))
		return NULL;
	return &cur.ctx;
}

/* ---- a past journal ------------------------------------------------------------- */

char *trace_traces_url(const char *ep)
{
	if (!ep || (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) || strlen(ep) > 2000)
		return NULL;
	size_t n = strlen(ep);
	bool full = n >= 10 && !strcmp(ep + n - 10, "/v1/traces");
	while (!full && n && ep[n - 1] == '/')
		n--;
	char *url = NULL;
	if (asprintf(&url, "%.*s%s", (int)n, ep, full ? "" : "/v1/traces") < 0)
		return NULL;
	return url;
}

static int flush(const char *url, const char *service, const struct trace_headers *h,
                 bool public_only, json_t **spans, long *sent, char *err, size_t errlen)
{
	size_t n = json_array_size(*spans);
	if (!n)
		return 0;
	int r = otlp_post(url, service, h, *spans, 10000, public_only, err, errlen);
	*spans = json_array();
	if (r < 0)
		return -1;
	*sent += (long)n;
	return *spans ? 0 : -1;
}

long trace_export_journal(int fd, const char *url, const char *service,
                          const struct trace_headers *h, bool public_only, char *err, size_t errlen)
{
	FILE *f = fdopen(dup(fd), "re");
	if (!f) {
		snprintf(err, errlen, "cannot read the journal");
		return -1;
	}
	struct trace_root root = { 0 };
	json_t *spans = json_array();
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	long sent = 0;
	int r = 0;
	while (r == 0 && spans && (n = getline(&line, &cap, f)) > 0) {
		if ((size_t)n > JCHAIN_LINE_MAX + 1)
			continue;
		json_t *l = json_loadb(line, (size_t)n, 0, NULL);
		trace_line_spans(&root, l, spans);
		json_decref(l);
		if (json_array_size(spans) >= EXPORT_BATCH)
			r = flush(url, service, h, public_only, &spans, &sent, err, errlen);
	}
	if (r == 0 && spans)
		r = flush(url, service, h, public_only, &spans, &sent, err, errlen);
	free(line);
	fclose(f);
	json_decref(spans);
	trace_root_fini(&root);
	return r < 0 ? -1 : sent;
}
