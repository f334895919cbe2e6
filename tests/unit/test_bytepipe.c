/* Unit tests: common/bytepipe.c between two socket pairs.  The test holds
 * the outer ends (a0, b0); the pipe joins the inner ones (a1, b1). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bytepipe.h"
#include "clock.h"
#include "unit.h"

struct pipe_run {
	int a0, a1, b0, b1;
	struct bytepipe_opts o;
	struct bytepipe_count n;
	int result;
	pthread_t t;
};

static void *runner(void *arg)
{
	struct pipe_run *p = arg;
	p->result = bytepipe_run(p->a1, p->b1, &p->o, &p->n);
	return NULL;
}

static void start(struct pipe_run *p)
{
	int sa[2], sb[2];
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sa), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sb), 0);
	p->a0 = sa[0];
	p->a1 = sa[1];
	p->b0 = sb[0];
	p->b1 = sb[1];
	ck_assert_int_eq(pthread_create(&p->t, NULL, runner, p), 0);
}

static int finish(struct pipe_run *p)
{
	pthread_join(p->t, NULL);
	close(p->a0);
	close(p->a1);
	close(p->b0);
	close(p->b1);
	return p->result;
}

/* read_all() - from fd until its end (or max bytes); the count. */
static size_t read_all(int fd, uint8_t *buf, size_t max)
{
	size_t n = 0;
	for (;;) {
		struct pollfd f = { .fd = fd, .events = POLLIN };
		ck_assert_int_eq(poll(&f, 1, 10000), 1);
		ssize_t k = read(fd, buf + n, max - n);
		ck_assert_int_ge(k, 0);
		if (k == 0 || (n += (size_t)k) == max)
			return n;
	}
}

struct writer {
	int fd;
	const uint8_t *p;
	size_t n;
	bool shut;
};

static void *write_main(void *arg)
{
	struct writer *w = arg;
	size_t off = 0;
	while (off < w->n) {
		ssize_t k = write(w->fd, w->p + off, w->n - off);
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	if (w->shut)
		shutdown(w->fd, SHUT_WR);
	return NULL;
}

static void setup(void)
{
	signal(SIGPIPE, SIG_IGN);
}

START_TEST(both_ways_and_half_close)
{
	struct pipe_run p = { .o = { .stop_fd = -1 } };
	start(&p);
	size_t n = 3u << 20;
	uint8_t *x = malloc(n), *y = malloc(n), *got = malloc(n);
	for (size_t i = 0; i < n; i++) {
		x[i] = (uint8_t)(i * 7);
		y[i] = (uint8_t)(i * 13 + 1);
	}
	/* Both ways at once, more than either buffer holds. */
	struct writer wa = { p.a0, x, n, true }, wb = { p.b0, y, n, false };
	pthread_t ta, tb;
	pthread_create(&ta, NULL, write_main, &wa);
	pthread_create(&tb, NULL, write_main, &wb);
	ck_assert_uint_eq(read_all(p.a0, got, n), n);
	ck_assert_mem_eq(got, y, n);
	/* a's end of stream reached b as one, while b still sends. */
	ck_assert_uint_eq(read_all(p.b0, got, n), n);
	ck_assert_mem_eq(got, x, n);
	uint8_t one;
	ck_assert_int_eq(read(p.b0, &one, 1), 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	ck_assert_int_eq(write(p.b0, "late", 4), 4);
	ck_assert_uint_eq(read_all(p.a0, got, 4), 4);
	ck_assert_mem_eq(got, "late", 4);
	shutdown(p.b0, SHUT_WR);
	ck_assert_uint_eq(read_all(p.a0, got, 1), 0);
	ck_assert_int_eq(finish(&p), 0);
	ck_assert_uint_eq(p.n.a_to_b, n);
	ck_assert_uint_eq(p.n.b_to_a, n + 4);
	free(x);
	free(y);
	free(got);
}
END_TEST

START_TEST(bytes_read_before)
{
	struct pipe_run p = { .o = { .stop_fd = -1,
		                     .to_b = (const uint8_t *)"early-a ",
		                     .to_b_len = 8,
		                     .to_a = (const uint8_t *)"early-b ",
		                     .to_a_len = 8 } };
	start(&p);
	ck_assert_int_eq(write(p.a0, "then-a", 6), 6);
	ck_assert_int_eq(write(p.b0, "then-b", 6), 6);
	shutdown(p.a0, SHUT_WR);
	shutdown(p.b0, SHUT_WR);
	uint8_t got[64];
	ck_assert_uint_eq(read_all(p.b0, got, sizeof(got)), 14);
	ck_assert_mem_eq(got, "early-a then-a", 14);
	ck_assert_uint_eq(read_all(p.a0, got, sizeof(got)), 14);
	ck_assert_mem_eq(got, "early-b then-b", 14);
	ck_assert_int_eq(finish(&p), 0);
}
END_TEST

START_TEST(idle_limit)
{
	struct pipe_run p = { .o = { .idle_ms = 300, .stop_fd = -1 } };
	start(&p);
	ck_assert_int_eq(write(p.a0, "x", 1), 1);
	uint8_t c;
	ck_assert_uint_eq(read_all(p.b0, &c, 1), 1);
	int64_t t0 = mono_ms();
	ck_assert_int_eq(finish(&p), -ETIMEDOUT);
	int64_t took = mono_ms() - t0;
	ck_assert_int_ge(took, 250);
	ck_assert_int_lt(took, 5000);
}
END_TEST

START_TEST(stop_and_reset)
{
	struct pipe_run p = { .o = { .stop_fd = eventfd(0, EFD_CLOEXEC) } };
	ck_assert_int_ge(p.o.stop_fd, 0);
	start(&p);
	uint64_t one = 1;
	ck_assert_int_eq(write(p.o.stop_fd, &one, 8), 8);
	ck_assert_int_eq(finish(&p), -ECANCELED);
	close(p.o.stop_fd);
	/* A side gone whole while the other still sends: the pipe ends. */
	struct pipe_run q = { .o = { .stop_fd = -1 } };
	start(&q);
	close(q.b0);
	q.b0 = -1;
	static uint8_t lots[1 << 20];
	struct writer w = { q.a0, lots, sizeof(lots), false };
	pthread_t t;
	pthread_create(&t, NULL, write_main, &w);
	pthread_join(q.t, NULL);
	ck_assert_int_lt(q.result, 0);
	close(q.a1); /* the writer sees its peer gone */
	pthread_join(t, NULL);
	close(q.a0);
	close(q.b1);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("bytepipe");
	TCase *t = tcase_create("bytepipe");
	tcase_add_checked_fixture(t, setup, NULL);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, both_ways_and_half_close);
	tcase_add_test(t, bytes_read_before);
	tcase_add_test(t, idle_limit);
	tcase_add_test(t, stop_and_reset);
	suite_add_tcase(s, t);
	return s;
}

UNIT_MAIN()
