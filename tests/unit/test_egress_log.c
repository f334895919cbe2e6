/* Unit tests: the egress log's pieces: the UTC time stamp (computed
 * without tz files, for the jail), one JSON line per record with the
 * contract's keys, and the NFLOG packet reader (egress/nflog.c). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "egress/elog.h"
#include "egress/nflog.h"
#include "unit.h"

START_TEST(time_stamps)
{
	char t[40];
	elog_format_time(0, t, sizeof(t));
	ck_assert_str_eq(t, "1970-01-01T00:00:00.000Z");
	elog_format_time(1796137200123LL, t, sizeof(t));
	ck_assert_str_eq(t, "2026-12-01T15:00:00.123Z");
	elog_format_time(951868799999LL, t, sizeof(t));
	ck_assert_str_eq(t, "2000-02-29T23:59:59.999Z");
}
END_TEST

START_TEST(one_line)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	struct netaddr a;
	ck_assert_int_eq(netaddr_parse("198.51.100.7", &a), 0);
	struct elog_rec r = { .proto = "tcp",
		              .dst = &a,
		              .port = 443,
		              .name = "allowed.test",
		              .rule = "allowed.test",
		              .allow = true,
		              .via = "proxy",
		              .bytes_out = 10,
		              .bytes_in = 20 };
	elog_write(p[1], &r);
	struct elog_rec d = { .proto = "dns", .port = 53, .via = "dns", .bytes_out = -1 };
	elog_write(p[1], &d);
	close(p[1]);
	char buf[2048];
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	ck_assert_ptr_nonnull(nl);
	*nl = '\0';
	ck_assert(strstr(buf, "\"proto\":\"tcp\",\"dst\":\"198.51.100.7\",\"port\":443,\"name\":"
	                      "\"allowed.test\",\"rule\":\"allowed.test\",\"verdict\":\"allow\","
	                      "\"via\":\"proxy\",\"bytes\":30,\"bytes_out\":10,\"bytes_in\":20}"));
	ck_assert(!strncmp(buf, "{\"time\":\"", 9));
	ck_assert(strstr(nl + 1, "\"dst\":null,\"port\":53,\"name\":null,\"rule\":null,\"verdict\":"
	                         "\"deny\",\"via\":\"dns\",\"bytes\":null}\n"));
}
END_TEST

START_TEST(nflog_packets)
{
	uint8_t v4[28] = { 0x45, 0,  0, 28, 0,   0,  0x40, 0, 64,   6,    0,    0,
		           172,  16, 0, 2,  198, 51, 100,  7, 0x9c, 0x40, 0x23, 0x28 };
	struct nflog_pkt k;
	ck_assert_int_eq(nflog_parse_ip(v4, sizeof(v4), &k), 0);
	ck_assert_int_eq(k.proto, 6);
	ck_assert_int_eq(k.port, 9000);
	char t[64];
	ck_assert_str_eq(netaddr_format(&k.dst, t, sizeof(t)), "198.51.100.7");
	ck_assert_str_eq(netaddr_format(&k.src, t, sizeof(t)), "172.16.0.2");
	/* Too short for ports: none. */
	ck_assert_int_eq(nflog_parse_ip(v4, 22, &k), 0);
	ck_assert_int_eq(k.port, -1);
	/* A bad header length. */
	v4[0] = 0x4f;
	ck_assert_int_eq(nflog_parse_ip(v4, sizeof(v4), &k), -EINVAL);
	v4[0] = 0x42;
	ck_assert_int_eq(nflog_parse_ip(v4, sizeof(v4), &k), -EINVAL);
	/* A later fragment carries no ports. */
	v4[0] = 0x45;
	v4[7] = 1;
	ck_assert_int_eq(nflog_parse_ip(v4, sizeof(v4), &k), 0);
	ck_assert_int_eq(k.port, -1);
	uint8_t v6[44] = { 0x60,        [6] = 17, [24] = 0x20, [25] = 0x01, [26] = 0x0d,
		           [27] = 0xb8, [39] = 1, [42] = 0,    [43] = 53 };
	ck_assert_int_eq(nflog_parse_ip(v6, sizeof(v6), &k), 0);
	ck_assert_int_eq(k.port, 53);
	ck_assert_str_eq(netaddr_format(&k.dst, t, sizeof(t)), "2001:db8::1");
	ck_assert_int_eq(nflog_parse_ip(v6, 10, &k), -EINVAL);
}
END_TEST

/* The log stops at its cap with one line saying so, and only one. */
START_TEST(cap)
{
	char path[] = "/tmp/cove-elog-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	struct netaddr a, src;
	ck_assert_int_eq(netaddr_parse("198.51.100.7", &a), 0);
	ck_assert_int_eq(netaddr_parse("198.51.100.91", &src), 0);
	struct elog_rec r = { .proto = "udp",
		              .dst = &a,
		              .port = 53,
		              .rule = "spoofed-source",
		              .via = "nic",
		              .src = &src,
		              .bytes_out = -1 };
	for (int i = 0; i < 200; i++)
		elog_write_capped(fd, &r, 4096);
	off_t size = lseek(fd, 0, SEEK_END);
	ck_assert_int_le(size, 4096);
	ck_assert_int_gt(size, 4096 - 2 * ELOG_CAP_RESERVE);
	char buf[8192];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	ck_assert_int_eq(n, size);
	buf[n] = 0;
	ck_assert(strstr(buf, "\"rule\":\"spoofed-source\",\"verdict\":\"deny\",\"via\":\"nic\","
	                      "\"bytes\":null,\"src\":\"198.51.100.91\"}\n"));
	const char *note = "\"note\":\"egress.log reached its cap of 4096 bytes: no more lines are "
	                   "written\"}\n";
	char *first = strstr(buf, note);
	ck_assert_ptr_nonnull(first);
	ck_assert_ptr_null(strstr(first + 1, note));
	ck_assert_int_eq(first + strlen(note) - buf, n); /* the last line */
	/* Emptied by its reader: lines again. */
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	elog_write_capped(fd, &r, 4096);
	ck_assert_int_gt(lseek(fd, 0, SEEK_END), 0);
	close(fd);
	/* A pipe is not capped. */
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	for (int i = 0; i < 40; i++)
		elog_write_capped(p[1], &r, 1024);
	close(p[1]);
	size_t total = 0;
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		total += (size_t)n;
	close(p[0]);
	ck_assert_uint_gt(total, 4096);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("egress_log");
	TCase *t = tcase_create("log");
	tcase_add_test(t, time_stamps);
	tcase_add_test(t, one_line);
	tcase_add_test(t, nflog_packets);
	tcase_add_test(t, cap);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
