/* Unit tests: the token buckets of base/ratelimit.c on a fake clock.  A
 * limited bucket serves its burst at once, then exactly its rate; a
 * request larger than the bucket waits for a full bucket and leaves debt
 * behind, so the long-run rate holds; the op bucket limits alone; a flush
 * (0 bytes) does not wait on byte debt; waits are never 0 and never too
 * short. */
#include <stdint.h>

#include "base/ratelimit.h"
#include "unit.h"

#define MIB (1024ULL * 1024)
#define MS  1000000ULL

START_TEST(unlimited_never_waits)
{
	struct ratelimit rl;
	rl_init(&rl, 0, 0, 0, 0, 0);
	ck_assert(!rl_enabled(&rl));
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(rl_take(&rl, 64 * MIB, 1, 0), 0);
	ck_assert_uint_eq(rl.throttled, 0);
}
END_TEST

START_TEST(burst_then_rate)
{
	struct ratelimit rl;
	/* 16 MiB/s, default burst 1.6 MiB: one 1 MiB request now, not two. */
	rl_init(&rl, 16 * MIB, 0, 0, 0, 1000);
	ck_assert(rl_enabled(&rl));
	ck_assert_uint_eq(rl.bytes.burst, 16 * MIB / 10);
	ck_assert_uint_eq(rl_take(&rl, MIB, 1, 1000), 0);
	uint64_t w = rl_take(&rl, MIB, 1, 1000);
	ck_assert_uint_gt(w, 0);
	ck_assert_uint_eq(rl.throttled, 1);
	/* The wait is what the missing tokens take at 16 MiB/s, not less. */
	uint64_t missing = MIB - (16 * MIB / 10 - MIB);
	ck_assert_uint_ge(w, missing * RL_NS_PER_S / (16 * MIB));
	ck_assert_uint_ne(rl_take(&rl, MIB, 1, 1000 + w - 1), 0);
	ck_assert_uint_eq(rl_take(&rl, MIB, 1, 1000 + w), 0);
}
END_TEST

/* Serving 64 MiB in 1 MiB requests, each as soon as allowed, takes the
 * time the rate says, minus the burst. */
START_TEST(long_run_rate)
{
	struct ratelimit rl;
	uint64_t now = 0;
	rl_init(&rl, 16 * MIB, 0, 0, 0, now);
	for (int i = 0; i < 64; i++) {
		uint64_t w;
		while ((w = rl_take(&rl, MIB, 1, now)) != 0)
			now += w;
	}
	uint64_t expect = (64 * MIB - 16 * MIB / 10) * RL_NS_PER_S / (16 * MIB);
	ck_assert_uint_ge(now, expect - MS);
	ck_assert_uint_le(now, expect + MS);
}
END_TEST

START_TEST(oversized_request_served_when_full)
{
	struct ratelimit rl;
	uint64_t now = 0;
	rl_init(&rl, 1000, 100, 0, 0, now);
	/* 1000 tokens through a 100-token bucket: served at once (it is full). */
	ck_assert_uint_eq(rl_take(&rl, 1000, 1, now), 0);
	ck_assert_int_eq(rl.bytes.tokens, -900);
	/* The debt is paid off first: the next 100 tokens wait a second. */
	uint64_t w = rl_take(&rl, 100, 1, now);
	ck_assert_uint_eq(w, RL_NS_PER_S);
	/* A bucket that is not full does not take an oversized request. */
	now += w;
	ck_assert_uint_eq(rl_take(&rl, 50, 1, now), 0);
	w = rl_take(&rl, 1000, 1, now);
	ck_assert_uint_eq(w, 50 * RL_NS_PER_S / 1000);
	ck_assert_uint_eq(rl_take(&rl, 1000, 1, now + w), 0);
}
END_TEST

START_TEST(ops_bucket)
{
	struct ratelimit rl;
	uint64_t now = 5 * RL_NS_PER_S;
	rl_init(&rl, 0, 0, 100, 10, now);
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(rl_take(&rl, 4096, 1, now), 0);
	uint64_t w = rl_take(&rl, 4096, 1, now);
	ck_assert_uint_eq(w, 10 * MS); /* one op at 100/s */
	/* A second's worth of ops over a simulated second: 100 (+ the burst). */
	int served = 0;
	uint64_t end = now + RL_NS_PER_S;
	while (now < end) {
		uint64_t d = rl_take(&rl, 4096, 1, now);
		if (d == 0)
			served++;
		else
			now += d;
	}
	ck_assert_int_ge(served, 99);
	ck_assert_int_le(served, 101);
}
END_TEST

START_TEST(zero_tokens_not_consulted)
{
	struct ratelimit rl;
	rl_init(&rl, 1000, 100, 0, 0, 0);
	ck_assert_uint_eq(rl_take(&rl, 5000, 1, 0), 0); /* deep in debt */
	ck_assert_uint_eq(rl_take(&rl, 0, 1, 0), 0);    /* a flush goes through */
	ck_assert_uint_gt(rl_take(&rl, 512, 1, 0), 0);
}
END_TEST

START_TEST(refill_caps_at_burst_and_fractions_add_up)
{
	struct ratelimit rl;
	rl_init(&rl, 3, 3, 0, 0, 0);
	ck_assert_uint_eq(rl_take(&rl, 3, 0, 0), 0);
	/* 3 tokens/s: 1 ns short of a third of a second earns nothing, but
	 * the remainder is kept: 1 ns more earns the token. */
	uint64_t t = RL_NS_PER_S / 3;
	ck_assert_uint_eq(rl_take(&rl, 1, 0, t), 1);
	ck_assert_uint_eq(rl_take(&rl, 1, 0, t + 1), 0);
	/* Remainders add up: 1e9 steps of 1 ns would be too slow, 3 steps of
	 * 1e9 / 3 + 1 ns earn 3 tokens. */
	for (int i = 0; i < 3; i++) {
		t += RL_NS_PER_S / 3 + 1;
		ck_assert_uint_eq(rl_take(&rl, 1, 0, t), 0);
	}
	/* A long idle time does not bank more than the burst. */
	t += 3600 * RL_NS_PER_S;
	ck_assert_uint_eq(rl_take(&rl, 3, 0, t), 0);
	ck_assert_uint_gt(rl_take(&rl, 1, 0, t), 0);
	/* A clock that goes back earns nothing and breaks nothing. */
	ck_assert_uint_gt(rl_take(&rl, 1, 0, t - RL_NS_PER_S), 0);
}
END_TEST

START_TEST(huge_values_do_not_overflow)
{
	struct ratelimit rl;
	rl_init(&rl, UINT64_MAX, UINT64_MAX, 1, 0, 0);
	ck_assert_uint_eq(rl.ops.burst, 1);
	ck_assert_uint_eq(rl_take(&rl, UINT64_MAX, 1, 0), 0);
	uint64_t w = rl_take(&rl, UINT64_MAX, 1, UINT64_MAX / 4);
	(void)w; /* no UBSan report is the test */
	rl_init(&rl, 1, 1, 0, 0, 0);
	ck_assert_uint_eq(rl_take(&rl, UINT64_MAX, 0, 0), 0);
	ck_assert_uint_gt(rl_take(&rl, 1, 0, 0), 0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("ratelimit");
	TCase *tc = tcase_create("ratelimit");
	tcase_add_test(tc, unlimited_never_waits);
	tcase_add_test(tc, burst_then_rate);
	tcase_add_test(tc, long_run_rate);
	tcase_add_test(tc, oversized_request_served_when_full);
	tcase_add_test(tc, ops_bucket);
	tcase_add_test(tc, zero_tokens_not_consulted);
	tcase_add_test(tc, refill_caps_at_burst_and_fractions_add_up);
	tcase_add_test(tc, huge_values_do_not_overflow);
	suite_add_tcase(s, tc);
	return s;
}

UNIT_MAIN()
