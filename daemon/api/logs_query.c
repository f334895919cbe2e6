/* The logs route's ?since= (logs_query.h). */
#include "daemon/api/logs_query.h"

#include <jansson.h>
#include <string.h>
#include <time.h>

#include "common/errf.h"

/* n digits at v as a number, or -1. */
static int digits(const char *v, int n)
{
	int x = 0;
	for (int i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	return x;
}

int coved_rfc3339_ms(const char *v, size_t len, int64_t *ms)
{
	/* YYYY-MM-DDTHH:MM:SS */
	if (len < 20 || v[4] != '-' || v[7] != '-' || (v[10] != 'T' && v[10] != 't') ||
	    v[13] != ':' || v[16] != ':')
		return -1;
	int y = digits(v, 4), mo = digits(v + 5, 2), d = digits(v + 8, 2);
	int h = digits(v + 11, 2), mi = digits(v + 14, 2), s = digits(v + 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
	    mi > 59 || s < 0 || s > 60)
		return -1;
	size_t i = 19;
	int64_t frac = 0;
	if (v[i] == '.') {
		size_t k = 0;
		for (i++; i < len && v[i] >= '0' && v[i] <= '9'; i++, k++)
			if (k < 3)
				frac = frac * 10 + (v[i] - '0');
		if (k == 0)
			return -1;
		for (; k < 3; k++)
			frac *= 10;
	}
	int64_t off = 0;
	if (i < len && (v[i] == 'Z' || v[i] == 'z')) {
		i++;
	} else if (i + 6 == len && (v[i] == '+' || v[i] == '-') && v[i + 3] == ':') {
		int oh = digits(v + i + 1, 2), om = digits(v + i + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return -1;
		off = (v[i] == '+' ? 1 : -1) * (int64_t)(oh * 3600 + om * 60);
		i += 6;
	} else {
		return -1;
	}
	if (i != len)
		return -1;
	struct tm tm = { .tm_year = y - 1900,
		         .tm_mon = mo - 1,
		         .tm_mday = d,
		         .tm_hour = h,
		         .tm_min = mi,
		         .tm_sec = s };
	time_t t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	*ms = ((int64_t)t - off) * 1000 + frac;
	return 0;
}

int coved_since_parse(const char *v, struct coved_since *s, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	size_t n = strlen(v);
	if (n > 0 && n <= 19 && strspn(v, "0123456789") == n) {
		uint64_t x = 0;
		for (size_t i = 0; i < n; i++)
			x = x * 10 + (uint64_t)(v[i] - '0');
		s->seq = x;
		return 0;
	}
	if (n <= 64 && coved_rfc3339_ms(v, n, &s->ms) == 0) {
		s->by_time = true;
		return 0;
	}
	errf(err, errlen, -1, "'since' must be a seq number or an RFC 3339 time");
	return -1;
}

bool coved_since_keeps(const struct coved_since *s, const char *line, size_t len)
{
	json_t *o = json_loadb(line, len, 0, NULL);
	bool keep = true;
	if (!s->by_time) {
		json_t *q = json_object_get(o, "seq");
		keep = !json_is_integer(q) || (uint64_t)json_integer_value(q) > s->seq;
	} else {
		json_t *ts = json_object_get(o, "ts");
		int64_t ms;
		if (json_is_string(ts) &&
		    coved_rfc3339_ms(json_string_value(ts), json_string_length(ts), &ms) == 0)
			keep = ms >= s->ms;
	}
	json_decref(o);
	return keep;
}
