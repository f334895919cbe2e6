#include "base/ratelimit.h"

#include <string.h>

uint64_t rl_default_burst(uint64_t rate)
{
	return rate / 10 ? rate / 10 : 1;
}

static void bucket_init(struct rl_bucket *b, uint64_t rate, uint64_t burst, uint64_t now_ns)
{
	memset(b, 0, sizeof(*b));
	b->rate = rate;
	b->burst = rate ? (burst ? burst : rl_default_burst(rate)) : 0;
	if (b->burst > INT64_MAX)
		b->burst = INT64_MAX;
	b->tokens = (int64_t)b->burst;
	b->last_ns = now_ns;
}

void rl_init(struct ratelimit *rl, uint64_t bps, uint64_t bps_burst, uint64_t iops,
             uint64_t iops_burst, uint64_t now_ns)
{
	memset(rl, 0, sizeof(*rl));
	bucket_init(&rl->bytes, bps, bps_burst, now_ns);
	bucket_init(&rl->ops, iops, iops_burst, now_ns);
}

static void bucket_add_once(struct rl_bucket *b, uint64_t once)
{
	if (!b->rate || !once)
		return;
	if (once > (uint64_t)INT64_MAX / 4)
		once = (uint64_t)INT64_MAX / 4;
	b->tokens += (int64_t)once;
}

void rl_add_one_time_burst(struct ratelimit *rl, uint64_t bytes, uint64_t ops)
{
	bucket_add_once(&rl->bytes, bytes);
	bucket_add_once(&rl->ops, ops);
}

bool rl_enabled(const struct ratelimit *rl)
{
	return rl->bytes.rate || rl->ops.rate;
}

/* Adds what the time since the last refill earned, up to the burst. */
static void refill(struct rl_bucket *b, uint64_t now_ns)
{
	if (now_ns <= b->last_ns)
		return; /* a clock that did not move (or went back) earns nothing */
	if (b->tokens >= (int64_t)b->burst) {
		/* Full, or above it on a one-time burst: nothing to earn. */
		b->last_ns = now_ns;
		b->frac = 0;
		return;
	}
	unsigned __int128 earned = (unsigned __int128)(now_ns - b->last_ns) * b->rate + b->frac;
	b->last_ns = now_ns;
	unsigned __int128 whole = earned / RL_NS_PER_S;
	b->frac = (uint64_t)(earned % RL_NS_PER_S);
	unsigned __int128 room = (unsigned __int128)((__int128)b->burst - b->tokens);
	if (whole >= room) {
		b->tokens = (int64_t)b->burst;
		b->frac = 0; /* a full bucket earns nothing more */
	} else {
		b->tokens += (int64_t)whole;
	}
}

/* 0 when the bucket can serve n tokens now, else the ns until it can. */
static uint64_t wait_ns(const struct rl_bucket *b, uint64_t n)
{
	if (!b->rate || !n)
		return 0;
	/* A request larger than the bucket needs a full bucket. */
	int64_t need = n > b->burst ? (int64_t)b->burst : (int64_t)n;
	if (b->tokens >= need)
		return 0;
	unsigned __int128 missing = (unsigned __int128)(need - b->tokens) * RL_NS_PER_S - b->frac;
	unsigned __int128 ns = (missing + b->rate - 1) / b->rate;
	if (ns > UINT64_MAX / 2)
		ns = UINT64_MAX / 2;
	return ns ? (uint64_t)ns : 1;
}

static void consume(struct rl_bucket *b, uint64_t n)
{
	if (!b->rate || !n)
		return;
	/* Debt is bounded: at most one oversized request below zero. */
	if (n > (uint64_t)INT64_MAX / 2)
		n = (uint64_t)INT64_MAX / 2;
	b->tokens -= (int64_t)n;
}

uint64_t rl_take(struct ratelimit *rl, uint64_t bytes, uint64_t ops, uint64_t now_ns)
{
	refill(&rl->bytes, now_ns);
	refill(&rl->ops, now_ns);
	uint64_t wb = wait_ns(&rl->bytes, bytes), wo = wait_ns(&rl->ops, ops);
	uint64_t w = wb > wo ? wb : wo;
	if (w) {
		rl->throttled++;
		rl->throttled_ns += w;
		return w;
	}
	consume(&rl->bytes, bytes);
	consume(&rl->ops, ops);
	return 0;
}
