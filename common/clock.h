/* The clock helpers of every Cove binary.  Deadlines and durations use
 * CLOCK_MONOTONIC: the wall clock can jump (and a restored guest's host
 * sets it); the wall clock is for timestamps only. */
#ifndef COVE_CLOCK_H
#define COVE_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds and in milliseconds. */
int64_t mono_ns(void);
int64_t mono_ms(void);

/* The time ms milliseconds (>= 0) from now on clock c, as an absolute
 * timespec: for pthread_cond_timedwait (CLOCK_REALTIME unless the
 * condition was made with another clock) and the like. */
struct timespec clock_after_ms(clockid_t c, int64_t ms);

/* Timestamps (never deadlines): the wall clock in Unix milliseconds, and
 * Unix milliseconds (>= 0) as RFC 3339 in UTC with milliseconds,
 * "2026-12-03T11:33:20.123Z" (out: at least CLOCK_RFC3339_LEN bytes). */
#define CLOCK_RFC3339_LEN 25
int64_t wall_ms(void);
void clock_rfc3339(int64_t unix_ms, char *out, size_t len);

#endif
