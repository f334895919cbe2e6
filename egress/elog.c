#include "elog.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *elog_rule_text(const struct netrule *r, char *buf, size_t len)
{
	if (!r || netrule_format(r, buf, len) < 0)
		return NULL;
	return buf;
}

/* Civil date from days since 1970-01-01 (Howard Hinnant's algorithm, in
 * our own words): no tz files, which the jail lacks. */
static void civil(int64_t days, int *y, unsigned *m, unsigned *d)
{
	days += 719468;
	int64_t era = (days >= 0 ? days : days - 146096) / 146097;
	unsigned doe = (unsigned)(days - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int)(yoe + era * 400 + (*m <= 2));
}

void elog_format_time(int64_t ms, char *buf, size_t len)
{
	int64_t s = ms / 1000, days = s / 86400, sod = s % 86400;
	int y;
	unsigned mo, d;
	civil(days, &y, &mo, &d);
	snprintf(buf, len, "%04d-%02u-%02uT%02u:%02u:%02u.%03uZ", y, mo, d, (unsigned)(sod / 3600),
	         (unsigned)(sod / 60 % 60), (unsigned)(sod % 60), (unsigned)(ms % 1000));
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* The file whose cap line was written (one log per cove-egress). */
static struct {
	dev_t dev;
	ino_t ino;
	bool set;
} full;

/* Whether @n more bytes may go to @fd under @cap; at the cap, writes the
 * one line saying so (stamped @t) the first time.  Only a regular file
 * is capped (a pipe holds nothing). */
static bool room_for(int fd, size_t n, uint64_t cap, const char *t)
{
	struct stat st;
	if (!cap || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return true;
	uint64_t size = (uint64_t)st.st_size,
	         limit = cap > ELOG_CAP_RESERVE ? cap - ELOG_CAP_RESERVE : 0;
	bool same = full.set && full.dev == st.st_dev && full.ino == st.st_ino;
	if (same && size < cap / 2)
		full.set = same = false; /* emptied by its reader: log again */
	if (size + n <= limit && !same)
		return true;
	if (same)
		return false;
	char line[ELOG_CAP_RESERVE];
	int k = snprintf(line, sizeof(line),
	                 "{\"time\":\"%s\",\"note\":\"egress.log reached its cap of %llu bytes: "
	                 "no more lines are written\"}\n",
	                 t, (unsigned long long)cap);
	if (k > 0 && (size_t)k < sizeof(line)) {
		ssize_t w = write(fd, line, (size_t)k);
		(void)w;
	}
	full.dev = st.st_dev;
	full.ino = st.st_ino;
	full.set = true;
	return false;
}

void elog_write(int fd, const struct elog_rec *r)
{
	elog_write_capped(fd, r, ELOG_MAX_BYTES);
}

void elog_write_capped(int fd, const struct elog_rec *r, uint64_t cap)
{
	if (fd < 0)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	char t[40], a[64];
	elog_format_time((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, t, sizeof(t));
	json_t *o = json_object();
	if (!o)
		return;
	json_object_set_new(o, "time", json_string(t));
	json_object_set_new(o, "proto", json_string(r->proto));
	json_object_set_new(
	    o, "dst", r->dst ? json_string(netaddr_format(r->dst, a, sizeof(a))) : json_null());
	json_object_set_new(o, "port", r->port >= 0 ? json_integer(r->port) : json_null());
	json_object_set_new(o, "name", str_or_null(r->name));
	json_object_set_new(o, "rule", str_or_null(r->rule));
	json_object_set_new(o, "verdict", json_string(r->allow ? "allow" : "deny"));
	json_object_set_new(o, "via", json_string(r->via));
	if (r->bytes_out >= 0) {
		json_object_set_new(o, "bytes", json_integer(r->bytes_out + r->bytes_in));
		json_object_set_new(o, "bytes_out", json_integer(r->bytes_out));
		json_object_set_new(o, "bytes_in", json_integer(r->bytes_in));
	} else {
		json_object_set_new(o, "bytes", json_null());
	}
	if (r->inject) {
		json_object_set_new(o, "proxy_rule", json_string(r->inject));
		if (r->injected)
			json_object_set_new(o, "headers", json_string("[redacted]"));
	}
	if (r->note)
		json_object_set_new(o, "note", json_string(r->note));
	if (r->src)
		json_object_set_new(o, "src", json_string(netaddr_format(r->src, a, sizeof(a))));
	char line[1024];
	size_t n = json_dumpb(o, line, sizeof(line) - 1, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (n == 0 || n >= sizeof(line) - 1)
		return;
	line[n++] = '\n';
	if (!room_for(fd, n, cap, t))
		return;
	ssize_t w = write(fd, line, n); /* O_APPEND: one write, one line */
	(void)w;
}
