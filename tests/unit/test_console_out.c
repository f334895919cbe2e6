/* Unit tests: the console's output buffer and cap (devices/console_out.c).
 * Output is written per line, not per byte; a capped file never passes its
 * cap, keeps the newest text from a line start, and holds every line after
 * that in order; a partial line waits for the timer or a flush. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/console_out.h"
#include "unit.h"

static int tmpfile_fd(char *path)
{
	strcpy(path, "/tmp/cove-console-XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static char *slurp(int fd, size_t *len)
{
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	char *buf = malloc((size_t)st.st_size + 1);
	ck_assert_int_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	buf[st.st_size] = 0;
	*len = (size_t)st.st_size;
	return buf;
}

static void put_str(struct console_out *o, const char *s)
{
	for (; *s; s++)
		console_out_put(o, (uint8_t)*s);
}

START_TEST(cap_keeps_newest_whole_lines)
{
	char path[64];
	int fd = tmpfile_fd(path);
	const uint64_t cap = 64 * 1024;
	struct console_out o;
	console_out_init(&o, fd, cap, -1);
	/* 4 MiB of numbered lines. */
	char line[64];
	unsigned int n = 0;
	uint64_t total = 0;
	while (total < 4 * 1024 * 1024) {
		int k = snprintf(line, sizeof(line), "line %08u of the guest's console\n", n++);
		put_str(&o, line);
		total += (uint64_t)k;
		struct stat st;
		if (n % 997 == 0) {
			ck_assert_int_eq(fstat(fd, &st), 0);
			ck_assert_uint_le((uint64_t)st.st_size, cap);
		}
	}
	console_out_flush(&o);
	size_t len;
	char *text = slurp(fd, &len);
	ck_assert_uint_le(len, cap);
	ck_assert_uint_ge(len, cap / 2 - 64);
	ck_assert_uint_eq(o.size, len);
	ck_assert_uint_eq(o.dropped + len, total);
	/* The newest line last, a whole line first, every line in between. */
	snprintf(line, sizeof(line), "line %08u of the guest's console\n", n - 1);
	ck_assert_str_eq(text + len - strlen(line), line);
	unsigned int first;
	ck_assert_int_eq(sscanf(text, "line %08u of", &first), 1);
	char *p = text;
	for (unsigned int i = first; i < n; i++) {
		snprintf(line, sizeof(line), "line %08u of the guest's console\n", i);
		ck_assert_int_eq(strncmp(p, line, strlen(line)), 0);
		p += strlen(line);
	}
	ck_assert_ptr_eq(p, text + len);
	free(text);
	close(fd);
	unlink(path);
}
END_TEST

START_TEST(buffered_by_line)
{
	int p[2];
	ck_assert_int_eq(pipe2(p, O_NONBLOCK), 0);
	struct console_out o;
	console_out_init(&o, p[1], 0, -1);
	char buf[64];
	put_str(&o, "partial");
	ck_assert_int_eq(read(p[0], buf, sizeof(buf)), -1); /* nothing yet */
	put_str(&o, " line\nnext");
	ck_assert_int_eq(read(p[0], buf, sizeof(buf)), 13); /* one write, one line */
	ck_assert_int_eq(memcmp(buf, "partial line\n", 13), 0);
	console_out_timer(&o); /* what the flush timer does */
	ck_assert_int_eq(read(p[0], buf, sizeof(buf)), 4);
	ck_assert_int_eq(memcmp(buf, "next", 4), 0);
	/* A line longer than the buffer goes out in buffer-sized writes. */
	for (int i = 0; i < CONSOLE_OUT_BUF + 10; i++)
		console_out_put(&o, 'x');
	static char big[2 * CONSOLE_OUT_BUF];
	ck_assert_int_eq(read(p[0], big, sizeof(big)), CONSOLE_OUT_BUF);
	console_out_flush(&o);
	ck_assert_int_eq(read(p[0], big, sizeof(big)), 10);
	close(p[0]);
	close(p[1]);
}
END_TEST

START_TEST(discarded_and_tiny_cap)
{
	struct console_out o;
	console_out_init(&o, -1, 0, -1);
	put_str(&o, "nowhere\n");
	ck_assert_uint_eq(o.len, 0);
	char path[64];
	int fd = tmpfile_fd(path);
	console_out_init(&o, fd, 10, -1); /* raised to room for two buffers */
	ck_assert_uint_eq(o.cap, 2 * CONSOLE_OUT_BUF);
	for (int i = 0; i < 100000; i++)
		console_out_put(&o, i % 50 ? 'y' : '\n');
	console_out_flush(&o);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_uint_le((uint64_t)st.st_size, 2 * CONSOLE_OUT_BUF);
	ck_assert_uint_gt((uint64_t)st.st_size, 0);
	close(fd);
	unlink(path);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("console_out");
	TCase *tc = tcase_create("console_out");
	tcase_add_test(tc, cap_keeps_newest_whole_lines);
	tcase_add_test(tc, buffered_by_line);
	tcase_add_test(tc, discarded_and_tiny_cap);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
